# SPDX-License-Identifier: MIT
# Graph files (issue 16): loading (YAML and JSON, positions, the shape) and validation (the
# meaning: targets, types, capabilities, warnings), over the fixtures in graphs/.
trellis_add_test_executable(trellis_flow_load_tests LAYERS flow
  ${CMAKE_CURRENT_LIST_DIR}/load_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/validate_test.cpp)
# The fixtures, the JSON Schema and docs/errors.md are read from the source tree, whatever the
# build or working directory.
target_compile_definitions(trellis_flow_load_tests PRIVATE
  TRELLIS_FLOW_GRAPHS_DIR="${CMAKE_CURRENT_LIST_DIR}/graphs"
  TRELLIS_DOCS_DIR="${PROJECT_SOURCE_DIR}/docs")
add_test(NAME trellis_flow_load_tests COMMAND trellis_flow_load_tests)
set_tests_properties(trellis_flow_load_tests PROPERTIES LABELS "flow" TIMEOUT 120)

# A libFuzzer target for the graph-file loader and the validator (.ci/run's fuzz phase builds it
# in build/fuzz with clang++ and TRELLIS_SANITIZE=address, then runs it for a bounded time over
# fuzz_corpus_loader/). Not a ctest test: a fuzzing run is open-ended.
if(TRELLIS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRELLIS_FUZZ=ON needs clang++ (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # Coverage feedback from the library's loader, not only from the harness.
  target_compile_options(trellis_flow PRIVATE -fsanitize=fuzzer-no-link)
  add_executable(trellis_fuzz_flow_loader ${CMAKE_CURRENT_LIST_DIR}/fuzz_flow_loader.cpp)
  target_link_libraries(trellis_fuzz_flow_loader PRIVATE trellis::flow)
  target_compile_options(trellis_fuzz_flow_loader PRIVATE -fsanitize=fuzzer)
  target_link_options(trellis_fuzz_flow_loader PRIVATE -fsanitize=fuzzer)
endif()
