# SPDX-License-Identifier: MIT
# The machine runners: issue 3's behaviours 1-7 and 10 over the three machines, and the
# threaded behaviours 8 and 9 (labelled "concurrency", so the TSan job runs them).
# Included from tests/CMakeLists.txt (after trellis_add_test_executable is defined).

trellis_add_test_executable(trellis_machine_runtime_tests LAYERS machine tbb signals2
  ${CMAKE_CURRENT_LIST_DIR}/state_machine_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/phase_test.cpp)
target_include_directories(trellis_machine_runtime_tests PRIVATE ${PROJECT_SOURCE_DIR}/examples)
add_test(NAME trellis_machine_runtime_tests COMMAND trellis_machine_runtime_tests)
set_tests_properties(trellis_machine_runtime_tests PROPERTIES LABELS "machine" TIMEOUT 300)

trellis_add_test_executable(trellis_machine_concurrency_tests LAYERS machine tbb signals2
  ${CMAKE_CURRENT_LIST_DIR}/machine_concurrency_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/phase_concurrency_test.cpp)
target_include_directories(trellis_machine_concurrency_tests PRIVATE ${PROJECT_SOURCE_DIR}/examples)
add_test(NAME trellis_machine_concurrency_tests COMMAND trellis_machine_concurrency_tests)
set_tests_properties(trellis_machine_concurrency_tests PROPERTIES LABELS "concurrency"
                                                                  TIMEOUT 600)
if(TRELLIS_SANITIZE STREQUAL "thread")
  # The same suppressions as trellis_concurrency_tests: see support/tsan.supp.
  set_tests_properties(trellis_machine_concurrency_tests PROPERTIES
    ENVIRONMENT
      "TSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/../support/tsan.supp:halt_on_error=1:second_deadlock_stack=1")
endif()

# The concurrent-send benchmark kit's bookkeeping (trellis::bench_kit, when Google Benchmark
# was found): its own executable, so that the other machine suites do not link benchmark.
if(TARGET trellis_bench_kit)
  trellis_add_test_executable(trellis_bench_kit_tests LAYERS bench_kit
    ${CMAKE_CURRENT_LIST_DIR}/bench_kit_test.cpp)
  add_test(NAME trellis_bench_kit_tests COMMAND trellis_bench_kit_tests)
  set_tests_properties(trellis_bench_kit_tests PROPERTIES LABELS "concurrency" TIMEOUT 300)
endif()
