# SPDX-License-Identifier: MIT
# Fan-out of effects (issue 16): RunContext::effects on MemoryStore, items on several threads.
# Labelled concurrency too: the whole suite runs under TSan.
trellis_add_test_executable(trellis_fanout_tests LAYERS agent signals2
  ${CMAKE_CURRENT_LIST_DIR}/fanout_test.cpp)
add_test(NAME trellis_fanout_tests COMMAND trellis_fanout_tests)
set_tests_properties(trellis_fanout_tests PROPERTIES LABELS "agent;concurrency" TIMEOUT 300)
