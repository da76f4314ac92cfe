# SPDX-License-Identifier: MIT
# The SCXML conformance suites (ctest label "conformance"): trellis_scion_fetch fetches
# @scion-scxml/test-framework 2.0.16 into <build>/scion with `npm pack` when the tests run (not
# at configure time; reused once unpacked; "Skipped" where npm is missing or the registry is
# unreachable), and trellis_scxml_conformance_tests runs every document of it and checks
# docs/scxml-conformance.md. Included from tests/CMakeLists.txt.

set(TRELLIS_SCION_TARBALL "" CACHE FILEPATH
    "scion-scxml-test-framework-2.0.16.tgz on disk, for offline builds (default: npm pack)")

if(TARGET trellis::scxml)
  set(trellis_scion_dir "${PROJECT_BINARY_DIR}/scion")
  add_test(NAME trellis_scion_fetch
           COMMAND ${CMAKE_COMMAND} "-DDEST=${trellis_scion_dir}"
                   "-DTARBALL=${TRELLIS_SCION_TARBALL}"
                   -P "${PROJECT_SOURCE_DIR}/cmake/FetchScion.cmake")
  set_tests_properties(trellis_scion_fetch PROPERTIES
    FIXTURES_SETUP trellis_scion LABELS "conformance" TIMEOUT 180
    SKIP_REGULAR_EXPRESSION "SKIPPED: ")

  trellis_add_test_executable(trellis_scxml_conformance_tests LAYERS scxml statechart
    ${CMAKE_CURRENT_LIST_DIR}/conformance_test.cpp)
  target_link_libraries(trellis_scxml_conformance_tests PRIVATE nlohmann_json::nlohmann_json)
  target_compile_definitions(trellis_scxml_conformance_tests PRIVATE
    "TRELLIS_SCION_DIR=\"${trellis_scion_dir}/package\""
    "TRELLIS_CONFORMANCE_DOC=\"${PROJECT_SOURCE_DIR}/docs/scxml-conformance.md\"")
  add_test(NAME trellis_scxml_conformance_tests COMMAND trellis_scxml_conformance_tests)
  # The runner prints "SKIPPED: ..." when the fixture could not fetch the suite (a skipped
  # fixture does not stop ctest from running the tests that need it).
  set_tests_properties(trellis_scxml_conformance_tests PROPERTIES
    FIXTURES_REQUIRED trellis_scion LABELS "conformance" TIMEOUT 300
    SKIP_REGULAR_EXPRESSION "SKIPPED: ")
endif()
