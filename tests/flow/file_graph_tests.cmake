# SPDX-License-Identifier: MIT
# FileGraph: graph files run on the engine (MemoryStore).
trellis_add_test_executable(trellis_flow_file_graph_tests LAYERS flow
  ${CMAKE_CURRENT_LIST_DIR}/file_graph_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/subgraph_test.cpp)
add_test(NAME trellis_flow_file_graph_tests COMMAND trellis_flow_file_graph_tests)
set_tests_properties(trellis_flow_file_graph_tests PROPERTIES LABELS "flow" TIMEOUT 300)
