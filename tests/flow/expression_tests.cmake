# SPDX-License-Identifier: MIT
# The condition language and `${...}` templates of graph files (issue 16): types, parsing,
# checking, evaluation and rendering, every error with its position.
trellis_add_test_executable(trellis_flow_expression_tests LAYERS flow
  ${CMAKE_CURRENT_LIST_DIR}/expression_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/interpolation_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/value_type_test.cpp)
add_test(NAME trellis_flow_expression_tests COMMAND trellis_flow_expression_tests)
set_tests_properties(trellis_flow_expression_tests PROPERTIES LABELS "flow" TIMEOUT 300)

# A libFuzzer target for the expression language and templates (.ci/run's fuzz phase may build
# it in build/fuzz with clang++ and TRELLIS_SANITIZE=address, then run it for a bounded time over
# fuzz_corpus_expressions/). Not a ctest test: a fuzzing run is open-ended.
if(TRELLIS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRELLIS_FUZZ=ON needs clang++ (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # Coverage feedback from the parser, checker and evaluator, not only from the harness.
  target_compile_options(trellis_flow PRIVATE -fsanitize=fuzzer-no-link)
  add_executable(trellis_fuzz_flow_expressions ${CMAKE_CURRENT_LIST_DIR}/fuzz_expressions.cpp)
  target_link_libraries(trellis_fuzz_flow_expressions PRIVATE trellis::flow)
  target_compile_options(trellis_fuzz_flow_expressions PRIVATE -fsanitize=fuzzer)
  target_link_options(trellis_fuzz_flow_expressions PRIVATE -fsanitize=fuzzer)
endif()
