# SPDX-License-Identifier: MIT
# Chaos: chaos_worker processes (a Worker with the chaos graph, chaos_graph.hpp) on a shared
# store, SIGKILLed at random, SIGSTOPped past their lease, or with a skewed clock (an injected
# Clock, and libfaketime on one process); the parent checks the store, the workers' records and
# the external system's log afterwards. Stores by spec (chaos_store.hpp: the one seam for
# PostgreSQL later). TRELLIS_TEST_SCALE scales runs and kills. Included from
# tests/agent/tests.cmake (after trellis_add_test_executable is defined).
add_executable(trellis_chaos_worker ${CMAKE_CURRENT_LIST_DIR}/chaos_worker.cpp)
target_link_libraries(trellis_chaos_worker PRIVATE trellis::sqlite)
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_chaos_worker)
endif()

trellis_add_test_executable(trellis_chaos_tests LAYERS sqlite
  ${CMAKE_CURRENT_LIST_DIR}/chaos_test.cpp)
target_compile_definitions(trellis_chaos_tests PRIVATE
  TRELLIS_CHAOS_WORKER="$<TARGET_FILE:trellis_chaos_worker>")
add_dependencies(trellis_chaos_tests trellis_chaos_worker)
# libfaketime (Debian's faketime): one worker process with a skewed wall clock.
find_file(TRELLIS_LIBFAKETIME libfaketimeMT.so.1
          PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/faketime /usr/lib/faketime)
if(TRELLIS_LIBFAKETIME)
  target_compile_definitions(trellis_chaos_tests PRIVATE
    TRELLIS_LIBFAKETIME="${TRELLIS_LIBFAKETIME}")
endif()
add_test(NAME trellis_chaos_tests COMMAND trellis_chaos_tests)
set_tests_properties(trellis_chaos_tests PROPERTIES LABELS "agent;chaos;crash" TIMEOUT 600)
