# SPDX-License-Identifier: MIT
# Workers, durable timers and enqueue (issue 15): MemoryStore in the calling thread, and a pool
# of threads on SqliteStore. Labelled concurrency too: the whole suite runs under TSan.
trellis_add_test_executable(trellis_worker_tests LAYERS sqlite
  ${CMAKE_CURRENT_LIST_DIR}/worker_test.cpp)
target_link_libraries(trellis_worker_tests PRIVATE trellis::sqlite)
add_test(NAME trellis_worker_tests COMMAND trellis_worker_tests)
set_tests_properties(trellis_worker_tests PROPERTIES LABELS "agent;concurrency" TIMEOUT 300)
