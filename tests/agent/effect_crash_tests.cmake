# SPDX-License-Identifier: MIT
# Effects with receipts under SIGKILL: an effect_crash_child runs an order graph (approval,
# at_most_once charge, idempotent receipt, at_least_once notification, a compensated variant)
# on a FileStore or a SqliteStore and is killed at every agent failpoint and at random times;
# the parent resumes it in fresh children and checks the store against the ledger of calls
# (TRELLIS_KILL_SEED replays a run, TRELLIS_KILL_TRIALS sets the random loop's length per
# store). Included from tests/agent/tests.cmake (after trellis_add_test_executable is defined).
find_package(OpenSSL REQUIRED)  # persist_test_support.hpp hashes hand-built files

add_executable(trellis_effect_crash_child ${CMAKE_CURRENT_LIST_DIR}/effect_crash_child.cpp)
target_link_libraries(trellis_effect_crash_child PRIVATE trellis::sqlite)
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_effect_crash_child)
endif()

trellis_add_test_executable(trellis_effect_crash_tests LAYERS sqlite
  ${CMAKE_CURRENT_LIST_DIR}/effect_crash_test.cpp)
target_link_libraries(trellis_effect_crash_tests PRIVATE trellis::sqlite OpenSSL::Crypto)
target_compile_definitions(trellis_effect_crash_tests PRIVATE
  TRELLIS_EFFECT_CRASH_CHILD="$<TARGET_FILE:trellis_effect_crash_child>")
add_dependencies(trellis_effect_crash_tests trellis_effect_crash_child)
add_test(NAME trellis_effect_crash_tests COMMAND trellis_effect_crash_tests)
set_tests_properties(trellis_effect_crash_tests PROPERTIES LABELS "agent;crash" TIMEOUT 600)
# The random loop's floor: with no time to run its trials, the loop must fail, saying so.
add_test(NAME trellis_effect_crash_tests.cut_short
         COMMAND trellis_effect_crash_tests
                 "--test-case=effect crash: SIGKILL at random times? FileStore")
set_tests_properties(trellis_effect_crash_tests.cut_short PROPERTIES
  LABELS "agent;crash" TIMEOUT 120 ENVIRONMENT "TRELLIS_KILL_DEADLINE_S=0"
  PASS_REGULAR_EXPRESSION
    "file: the deadline stopped the loop after 0 of [0-9]+ trials.*Status: FAILURE!")
