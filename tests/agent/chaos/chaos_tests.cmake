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

# The same chaos on PostgreSQL, plus its own faults (connections terminated by the server, the
# server stopped -m immediate and restarted): a second pair of executables built with
# TRELLIS_CHAOS_POSTGRES, so that the pair above never links libpq. Each test runs inside
# tests/support/with_postgres.sh (a throw-away cluster; exit 77, a visible skip, without a
# server); the restart case with fsync on, in a cluster of its own.
if(TARGET trellis::postgres)
  add_executable(trellis_chaos_postgres_worker ${CMAKE_CURRENT_LIST_DIR}/chaos_worker.cpp)
  target_link_libraries(trellis_chaos_postgres_worker PRIVATE trellis::sqlite trellis::postgres)
  target_compile_definitions(trellis_chaos_postgres_worker PRIVATE TRELLIS_CHAOS_POSTGRES)
  if(COMMAND trellis_set_warnings)
    trellis_set_warnings(trellis_chaos_postgres_worker)
  endif()

  trellis_add_test_executable(trellis_chaos_postgres_tests LAYERS sqlite postgres
    ${CMAKE_CURRENT_LIST_DIR}/chaos_test.cpp)
  target_link_libraries(trellis_chaos_postgres_tests PRIVATE PostgreSQL::PostgreSQL)
  target_compile_definitions(trellis_chaos_postgres_tests PRIVATE TRELLIS_CHAOS_POSTGRES
    TRELLIS_CHAOS_WORKER="$<TARGET_FILE:trellis_chaos_postgres_worker>")
  add_dependencies(trellis_chaos_postgres_tests trellis_chaos_postgres_worker)
  if(TRELLIS_LIBFAKETIME)
    target_compile_definitions(trellis_chaos_postgres_tests PRIVATE
      TRELLIS_LIBFAKETIME="${TRELLIS_LIBFAKETIME}")
  endif()
  set(_trellis_chaos_restart "*restarted mid-run*")
  add_test(NAME trellis_chaos_postgres
           COMMAND ${PROJECT_SOURCE_DIR}/tests/support/with_postgres.sh
                   $<TARGET_FILE:trellis_chaos_postgres_tests>
                   "--test-case-exclude=${_trellis_chaos_restart}")
  add_test(NAME trellis_chaos_postgres_restart
           COMMAND ${PROJECT_SOURCE_DIR}/tests/support/with_postgres.sh
                   $<TARGET_FILE:trellis_chaos_postgres_tests>
                   "--test-case=${_trellis_chaos_restart}")
  # The PostgreSQL tests take turns (with_postgres.sh).
  set_tests_properties(trellis_chaos_postgres trellis_chaos_postgres_restart PROPERTIES
                       LABELS "agent;chaos;postgres" TIMEOUT 600 SKIP_RETURN_CODE 77
                       RESOURCE_LOCK postgres)
  set_tests_properties(trellis_chaos_postgres_restart PROPERTIES
                       ENVIRONMENT "WITH_POSTGRES_OPTIONS=-o fsync=on")
endif()
