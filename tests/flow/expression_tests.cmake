# SPDX-License-Identifier: MIT
# The condition language and `${...}` templates of graph files (issue 16): types, parsing,
# checking, evaluation and rendering, every error with its position.
trellis_add_test_executable(trellis_flow_expression_tests LAYERS flow
  ${CMAKE_CURRENT_LIST_DIR}/expression_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/interpolation_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/value_type_test.cpp)
add_test(NAME trellis_flow_expression_tests COMMAND trellis_flow_expression_tests)
set_tests_properties(trellis_flow_expression_tests PROPERTIES LABELS "flow" TIMEOUT 300)
