# SPDX-License-Identifier: MIT
# SCXML files: the loader (each element, each refusal with its position), the writer (a chart
# saved and loaded back is the same chart). Included from tests/CMakeLists.txt (after
# trellis_add_test_executable is defined).

trellis_add_test_executable(trellis_scxml_tests LAYERS scxml
  ${CMAKE_CURRENT_LIST_DIR}/load_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/save_test.cpp)
add_test(NAME trellis_scxml_tests COMMAND trellis_scxml_tests)
set_tests_properties(trellis_scxml_tests PROPERTIES LABELS "scxml" TIMEOUT 300)

# A libFuzzer target for the loader (.ci/run's fuzz phase builds it in build/fuzz with clang++
# and TRELLIS_SANITIZE=address, then runs it for a bounded time over fuzz_corpus/). Not a ctest
# test: a fuzzing run is open-ended.
if(TRELLIS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRELLIS_FUZZ=ON needs clang++ (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # Coverage feedback from the loader and the chart compiler, not only from the harness.
  target_compile_options(trellis_scxml PRIVATE -fsanitize=fuzzer-no-link)
  target_compile_options(trellis_statechart PRIVATE -fsanitize=fuzzer-no-link)
  add_executable(trellis_fuzz_scxml ${CMAKE_CURRENT_LIST_DIR}/fuzz_scxml.cpp)
  target_link_libraries(trellis_fuzz_scxml PRIVATE trellis::scxml)
  target_compile_options(trellis_fuzz_scxml PRIVATE -fsanitize=fuzzer)
  target_link_options(trellis_fuzz_scxml PRIVATE -fsanitize=fuzzer)
endif()
