# SPDX-License-Identifier: MIT
# PostgresStore against a real, throw-away server: the Store conformance and operations suites
# (compiled again with TRELLIS_ALL_STORES=PostgresStore, so the other suites never link libpq)
# and PostgresStore's own cases. Each runs inside tests/support/with_postgres.sh (pg_virtualenv),
# which exits 77 when there is no server: ctest shows the test as skipped, never as passed.
# Included from tests/agent/tests.cmake.
find_package(PostgreSQL REQUIRED)

trellis_add_test_executable(trellis_postgres_store_tests LAYERS postgres sqlite
  ${CMAKE_CURRENT_LIST_DIR}/store_conformance_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/store_operations_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/postgres_store_test.cpp)
target_link_libraries(trellis_postgres_store_tests PRIVATE PostgreSQL::PostgreSQL OpenSSL::Crypto
                                                           SQLite::SQLite3)
target_compile_definitions(trellis_postgres_store_tests PRIVATE TRELLIS_TEST_POSTGRES
  TRELLIS_ALL_STORES=PostgresStore TRELLIS_SHARED_STORES=PostgresStore)

set(_trellis_with_postgres ${PROJECT_SOURCE_DIR}/tests/support/with_postgres.sh)
add_test(NAME trellis_postgres_store_tests
         COMMAND ${_trellis_with_postgres} $<TARGET_FILE:trellis_postgres_store_tests>)
add_test(NAME trellis_postgres_store_concurrency
         COMMAND ${_trellis_with_postgres} $<TARGET_FILE:trellis_postgres_store_tests>
                 --test-suite=concurrency)
set_tests_properties(trellis_postgres_store_tests PROPERTIES LABELS "agent;postgres"
                     TIMEOUT 600 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK postgres)
set_tests_properties(trellis_postgres_store_concurrency PROPERTIES
                     LABELS "agent;postgres;concurrency" TIMEOUT 600 SKIP_RETURN_CODE 77
                     RESOURCE_LOCK postgres)
