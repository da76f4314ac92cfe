# SPDX-License-Identifier: MIT
# The persist/ file layer: sidecar codec and atomic writes, the lock, the journal, failpoints.
# Included from tests/CMakeLists.txt (after trellis_add_test_executable is defined).
find_package(OpenSSL REQUIRED)  # the tests hash hand-built files themselves

# A child process for the cross-process cases (lock holder, failpoint kills).
add_executable(trellis_persist_helper ${CMAKE_CURRENT_LIST_DIR}/persist_helper.cpp)
target_link_libraries(trellis_persist_helper PRIVATE trellis::persist)
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_persist_helper)
endif()

trellis_add_test_executable(trellis_persist_tests LAYERS persist
  ${CMAKE_CURRENT_LIST_DIR}/errors_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/failpoint_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/journal_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/lock_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sidecar_test.cpp)
target_link_libraries(trellis_persist_tests PRIVATE OpenSSL::Crypto)
target_compile_definitions(trellis_persist_tests PRIVATE
  TRELLIS_PERSIST_HELPER="$<TARGET_FILE:trellis_persist_helper>")
add_dependencies(trellis_persist_tests trellis_persist_helper)
add_test(NAME trellis_persist_tests COMMAND trellis_persist_tests)
set_tests_properties(trellis_persist_tests PROPERTIES LABELS "persist" TIMEOUT 300)

# DurableStateMachine in process: every durability mode, bad sidecars, schema, names, the lock.
trellis_add_test_executable(trellis_durable_tests LAYERS persist tbb signals2 ${CMAKE_CURRENT_LIST_DIR}/durable_test.cpp)
target_link_libraries(trellis_durable_tests PRIVATE OpenSSL::Crypto)
add_test(NAME trellis_durable_tests COMMAND trellis_durable_tests)
set_tests_properties(trellis_durable_tests PROPERTIES LABELS "persist" TIMEOUT 300)

# DurableStateChart: charts in the sidecar (format version 2), restart, refusals; and the
# version 1 fixture of a flat machine (fixtures/counter-v1.json).
trellis_add_test_executable(trellis_durable_chart_tests LAYERS persist
  ${CMAKE_CURRENT_LIST_DIR}/durable_chart_test.cpp)
target_link_libraries(trellis_durable_chart_tests PRIVATE OpenSSL::Crypto)
target_compile_definitions(trellis_durable_chart_tests PRIVATE
  TRELLIS_PERSIST_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
add_test(NAME trellis_durable_chart_tests COMMAND trellis_durable_chart_tests)
set_tests_properties(trellis_durable_chart_tests PROPERTIES LABELS "persist" TIMEOUT 120)

# The document cycle example (examples/document_cycle.hpp) on its durable sidecar.
trellis_add_test_executable(trellis_doc_cycle_durable_tests LAYERS persist
  ${CMAKE_CURRENT_LIST_DIR}/doc_cycle_durable_test.cpp)
target_include_directories(trellis_doc_cycle_durable_tests PRIVATE ${PROJECT_SOURCE_DIR}/examples)
add_test(NAME trellis_doc_cycle_durable_tests COMMAND trellis_doc_cycle_durable_tests)
set_tests_properties(trellis_doc_cycle_durable_tests PROPERTIES LABELS "persist" TIMEOUT 120)

# Group commit is concurrency code: its cases also run in the ThreadSanitizer job.
add_test(NAME trellis_durable_group_concurrency
         COMMAND trellis_durable_tests "--test-case=durable: group*")
set_tests_properties(trellis_durable_group_concurrency PROPERTIES LABELS "concurrency" TIMEOUT 300)
if(TRELLIS_SANITIZE STREQUAL "thread")
  set_tests_properties(trellis_durable_group_concurrency PROPERTIES ENVIRONMENT
    "TSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/../support/tsan.supp:halt_on_error=1:second_deadlock_stack=1")
endif()

# The three writers of a durable machine on their own (SyncWriter, GroupWriter, AsyncWriter)
# and the events' hub and its Boost.Signals2 view.
trellis_add_test_executable(trellis_persist_writer_tests LAYERS persist signals2
  ${CMAKE_CURRENT_LIST_DIR}/async_writer_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/group_writer_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/persist_events_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/sync_writer_test.cpp)
target_link_libraries(trellis_persist_writer_tests PRIVATE OpenSSL::Crypto)
add_test(NAME trellis_persist_writer_tests COMMAND trellis_persist_writer_tests)
set_tests_properties(trellis_persist_writer_tests PROPERTIES LABELS "persist" TIMEOUT 300)

# The group and async writers and the hub are concurrency code: the ThreadSanitizer job runs
# their cases too.
add_test(NAME trellis_persist_writer_concurrency
         COMMAND trellis_persist_writer_tests
                 "--test-case=group writer:*,async writer:*,persist events:*")
set_tests_properties(trellis_persist_writer_concurrency PROPERTIES LABELS "concurrency"
                     TIMEOUT 300)
if(TRELLIS_SANITIZE STREQUAL "thread")
  set_tests_properties(trellis_persist_writer_concurrency PROPERTIES ENVIRONMENT
    "TSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/../support/tsan.supp:halt_on_error=1:second_deadlock_stack=1")
endif()

# Crashes: a durable_child is SIGKILLed at each failpoint and at random times; the parent
# reopens and checks that nothing acknowledged was lost (TRELLIS_KILL_SEED replays a run,
# TRELLIS_KILL_TRIALS sets the random loop's length).
add_executable(trellis_durable_child ${CMAKE_CURRENT_LIST_DIR}/durable_child.cpp)
target_link_libraries(trellis_durable_child PRIVATE trellis::persist)
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_durable_child)
endif()

trellis_add_test_executable(trellis_crash_tests LAYERS persist tbb ${CMAKE_CURRENT_LIST_DIR}/crash_test.cpp)
target_link_libraries(trellis_crash_tests PRIVATE OpenSSL::Crypto)
target_compile_definitions(trellis_crash_tests PRIVATE
  TRELLIS_DURABLE_CHILD="$<TARGET_FILE:trellis_durable_child>")
add_dependencies(trellis_crash_tests trellis_durable_child)
add_test(NAME trellis_crash_tests COMMAND trellis_crash_tests)
set_tests_properties(trellis_crash_tests PROPERTIES LABELS "persist;crash" TIMEOUT 300)
# The random loop's floor: with no time to run its trials, the loop must fail, saying so.
add_test(NAME trellis_crash_tests.cut_short
         COMMAND trellis_crash_tests "--test-case=crash: SIGKILL at random times*")
set_tests_properties(trellis_crash_tests.cut_short PROPERTIES
  LABELS "persist;crash" TIMEOUT 120 ENVIRONMENT "TRELLIS_KILL_DEADLINE_S=0"
  PASS_REGULAR_EXPRESSION "the deadline stopped the loop after 0 of [0-9]+ trials.*Status: FAILURE!")

# A libFuzzer target for the sidecar and journal loaders (.ci/run's fuzz phase builds it in
# build/fuzz with clang++ and TRELLIS_SANITIZE=address, then runs it for a bounded time over
# fuzz_corpus/). Not a ctest test: a fuzzing run is open-ended.
if(TRELLIS_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "TRELLIS_FUZZ=ON needs clang++ (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  # Coverage feedback from the library's loaders (persist and its I/O toolkit), not only from
  # the harness.
  target_compile_options(trellis_persist PRIVATE -fsanitize=fuzzer-no-link)
  target_compile_options(trellis_io PRIVATE -fsanitize=fuzzer-no-link)
  add_executable(trellis_fuzz_loaders ${CMAKE_CURRENT_LIST_DIR}/fuzz_loaders.cpp)
  target_link_libraries(trellis_fuzz_loaders PRIVATE trellis::persist)
  target_compile_options(trellis_fuzz_loaders PRIVATE -fsanitize=fuzzer)
  target_link_options(trellis_fuzz_loaders PRIVATE -fsanitize=fuzzer)
endif()

# A state without JSON conversions fails to compile in one short diagnostic that says what to
# define.
trellis_add_compile_fail_tests(trellis_persist_compile_fail ${CMAKE_CURRENT_LIST_DIR}/compile_fail
  "state_without_json|DurableStateMachine<S, E> needs nlohmann::json conversions for S|25"
  "control|"
  "events_without_signals2|#include <trellis/signals2/persist_events.hpp>|25"
  "events_with_signals2|")
