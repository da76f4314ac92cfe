# SPDX-License-Identifier: MIT
# The agent stores: one behavioural suite over MemoryStore, FileStore and SqliteStore (the
# conformance suite), plus each store's own layout, schema and bad input. Included from tests/agent/tests.cmake (after trellis_add_test_executable
# is defined).
find_package(OpenSSL REQUIRED)  # persist_test_support.hpp hashes hand-built files

# A child process that holds a lease until it is killed (the cross-process lease cases).
add_executable(trellis_store_lease_child ${CMAKE_CURRENT_LIST_DIR}/store_lease_child.cpp)
target_link_libraries(trellis_store_lease_child PRIVATE trellis::sqlite)
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_store_lease_child)
endif()

trellis_add_test_executable(trellis_store_tests LAYERS sqlite ${CMAKE_CURRENT_LIST_DIR}/store_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sqlite_store_test.cpp)
target_link_libraries(trellis_store_tests PRIVATE trellis::sqlite OpenSSL::Crypto SQLite::SQLite3)
target_compile_definitions(trellis_store_tests PRIVATE
  TRELLIS_STORE_LEASE_CHILD="$<TARGET_FILE:trellis_store_lease_child>"
  # A schema 4 database written by the SqliteStore of the release before issue 14.
  TRELLIS_SQLITE_V4_FIXTURE="${CMAKE_CURRENT_LIST_DIR}/fixtures/sqlite-v4.db"
  # A schema 5 database written by the SqliteStore of the release before durable timers.
  TRELLIS_SQLITE_V5_FIXTURE="${CMAKE_CURRENT_LIST_DIR}/fixtures/sqlite-v5.db"
  # A schema 6 database written by the release before cache entries and the hash chain.
  TRELLIS_SQLITE_V6_FIXTURE="${CMAKE_CURRENT_LIST_DIR}/fixtures/sqlite-v6.db")
add_dependencies(trellis_store_tests trellis_store_lease_child)
add_test(NAME trellis_store_tests COMMAND trellis_store_tests)
set_tests_properties(trellis_store_tests PROPERTIES LABELS "agent" TIMEOUT 300)

# The Store contract over every backend (TEST_CASE_TEMPLATE): a store that later issues add
# joins by adding a Harness and its name to TRELLIS_ALL_STORES. PostgresStore's cases (names
# ending in "<PostgresStore>", and postgres_store_test.cpp's "postgres store: ...") need a
# server: they run in tests/support/with_postgres.sh (label `postgres`), the others without.
find_package(PostgreSQL REQUIRED)
set(_trellis_with_postgres ${PROJECT_SOURCE_DIR}/tests/support/with_postgres.sh)
set(_trellis_not_postgres "--test-case-exclude=*<PostgresStore>*,postgres store:*")
set(_trellis_only_postgres "--test-case=*<PostgresStore>*,postgres store:*")
trellis_add_test_executable(trellis_store_conformance_tests LAYERS sqlite postgres
  ${CMAKE_CURRENT_LIST_DIR}/store_conformance_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/postgres_store_test.cpp)
target_link_libraries(trellis_store_conformance_tests PRIVATE trellis::sqlite OpenSSL::Crypto
                                                              SQLite::SQLite3 PostgreSQL::PostgreSQL)
target_compile_definitions(trellis_store_conformance_tests PRIVATE TRELLIS_TEST_POSTGRES)
add_test(NAME trellis_store_conformance_tests
         COMMAND trellis_store_conformance_tests ${_trellis_not_postgres})
set_tests_properties(trellis_store_conformance_tests PROPERTIES LABELS "agent" TIMEOUT 300)

# The cases with threads (two workers on one store object, the lease heartbeat) also run in the
# ThreadSanitizer job.
add_test(NAME trellis_store_concurrency COMMAND trellis_store_tests --test-suite=concurrency)
add_test(NAME trellis_store_conformance_concurrency
         COMMAND trellis_store_conformance_tests --test-suite=concurrency ${_trellis_not_postgres})
set_tests_properties(trellis_store_concurrency trellis_store_conformance_concurrency PROPERTIES
  LABELS "agent;concurrency" TIMEOUT 300)

# Operators' records and the operations over them (issue 14), over every store.
trellis_add_test_executable(trellis_store_operations_tests LAYERS sqlite postgres
  ${CMAKE_CURRENT_LIST_DIR}/store_operations_test.cpp ${CMAKE_CURRENT_LIST_DIR}/chain_test.cpp)
target_link_libraries(trellis_store_operations_tests PRIVATE trellis::sqlite OpenSSL::Crypto
                                                             SQLite::SQLite3 PostgreSQL::PostgreSQL)
target_compile_definitions(trellis_store_operations_tests PRIVATE TRELLIS_TEST_POSTGRES)
add_test(NAME trellis_store_operations_tests
         COMMAND trellis_store_operations_tests ${_trellis_not_postgres})
add_test(NAME trellis_store_operations_concurrency
         COMMAND trellis_store_operations_tests --test-suite=concurrency ${_trellis_not_postgres})
set_tests_properties(trellis_store_operations_tests PROPERTIES LABELS "agent" TIMEOUT 300)
set_tests_properties(trellis_store_operations_concurrency PROPERTIES LABELS "agent;concurrency"
                                                                     TIMEOUT 300)

# The same executables' PostgresStore cases, against a throw-away server (skipped, exit 77,
# without one).
add_test(NAME trellis_postgres_store_tests
         COMMAND ${_trellis_with_postgres} $<TARGET_FILE:trellis_store_conformance_tests>
                 ${_trellis_only_postgres})
add_test(NAME trellis_postgres_store_operations_tests
         COMMAND ${_trellis_with_postgres} $<TARGET_FILE:trellis_store_operations_tests>
                 ${_trellis_only_postgres})
add_test(NAME trellis_postgres_store_concurrency
         COMMAND ${_trellis_with_postgres} $<TARGET_FILE:trellis_store_conformance_tests>
                 --test-suite=concurrency ${_trellis_only_postgres})
set_tests_properties(trellis_postgres_store_tests trellis_postgres_store_operations_tests
                     PROPERTIES LABELS "agent;postgres" TIMEOUT 600 SKIP_RETURN_CODE 77
                                RESOURCE_LOCK postgres)
set_tests_properties(trellis_postgres_store_concurrency PROPERTIES
                     LABELS "agent;postgres;concurrency" TIMEOUT 600 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK postgres)

# FileStore layout version 2 (issue 14): the upgrade of the checked-in version 1 fixture, the
# read-only open, the run index, cancel requests, delete_run, events_after, graph shapes.
trellis_add_test_executable(trellis_file_store_v2_tests LAYERS agent
  ${CMAKE_CURRENT_LIST_DIR}/file_store_v2_test.cpp)
target_link_libraries(trellis_file_store_v2_tests PRIVATE trellis::sqlite OpenSSL::Crypto
                                                          SQLite::SQLite3)
target_compile_definitions(trellis_file_store_v2_tests PRIVATE
  TRELLIS_STORE_LEASE_CHILD="$<TARGET_FILE:trellis_store_lease_child>"
  TRELLIS_AGENT_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
add_dependencies(trellis_file_store_v2_tests trellis_store_lease_child)
add_test(NAME trellis_file_store_v2_tests COMMAND trellis_file_store_v2_tests)
set_tests_properties(trellis_file_store_v2_tests PROPERTIES LABELS "agent" TIMEOUT 300)
add_test(NAME trellis_file_store_v2_concurrency
         COMMAND trellis_file_store_v2_tests --test-suite=concurrency)
set_tests_properties(trellis_file_store_v2_concurrency PROPERTIES LABELS "agent;concurrency"
                                                                  TIMEOUT 300)
