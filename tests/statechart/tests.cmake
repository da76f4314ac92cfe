# SPDX-License-Identifier: MIT
# Statecharts: the builder, the SCXML algorithm, the runners.
# Included from tests/CMakeLists.txt (after trellis_add_test_executable is defined).

trellis_add_test_executable(trellis_statechart_tests LAYERS statechart
  ${CMAKE_CURRENT_LIST_DIR}/chart_core_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/builder_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/semantics_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/execution_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/runner_test.cpp)
add_test(NAME trellis_statechart_tests COMMAND trellis_statechart_tests)
set_tests_properties(trellis_statechart_tests PROPERTIES LABELS "statechart" TIMEOUT 300)
