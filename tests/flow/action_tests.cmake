# SPDX-License-Identifier: MIT
# Actions of graph files (issue 16): the registry, capabilities and the built-in actions.
trellis_add_test_executable(trellis_flow_action_tests LAYERS flow
  ${CMAKE_CURRENT_LIST_DIR}/action_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/builtin_actions_test.cpp)
add_test(NAME trellis_flow_action_tests COMMAND trellis_flow_action_tests)
set_tests_properties(trellis_flow_action_tests PROPERTIES LABELS "flow" TIMEOUT 120)
