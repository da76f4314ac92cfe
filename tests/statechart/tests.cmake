# SPDX-License-Identifier: MIT
# Statecharts: the builder, the SCXML algorithm, the runners.
# Included from tests/CMakeLists.txt (after trellis_add_test_executable is defined).

trellis_add_test_executable(trellis_statechart_tests LAYERS statechart
  ${CMAKE_CURRENT_LIST_DIR}/chart_core_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/builder_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/semantics_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/execution_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/runner_test.cpp)
add_test(NAME trellis_statechart_tests COMMAND trellis_statechart_tests)
set_tests_properties(trellis_statechart_tests PROPERTIES LABELS "statechart" TIMEOUT 300)

# Diagrams (Mermaid, DOT) and the testing tools on charts (configuration matrix, explore):
# golden files are read from the source tree, where TRELLIS_UPDATE_GOLDEN=1 rewrites them.
trellis_add_test_executable(trellis_statechart_tools_tests LAYERS statechart testing
  ${CMAKE_CURRENT_LIST_DIR}/diagram_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/configuration_matrix_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explore_test.cpp)
target_compile_definitions(trellis_statechart_tools_tests PRIVATE
  TRELLIS_STATECHART_GOLDEN_DIR="${CMAKE_CURRENT_LIST_DIR}/golden")
add_test(NAME trellis_statechart_tools_tests COMMAND trellis_statechart_tools_tests)
set_tests_properties(trellis_statechart_tools_tests PROPERTIES LABELS "statechart" TIMEOUT 300)

# The README's statechart section: the chart and the runner lines are exact excerpts of the
# media player example.
foreach(spec IN ITEMS "chart|examples/media_player/media_player.hpp|1|cpp"
                      "scxml|examples/media_player/media_player.scxml|1|xml"
                      "bindings|tests/scxml/media_player_test.cpp|2|cpp"
                      "runner|examples/media_player/media_player.cpp|3|cpp")
  string(REPLACE "|" ";" spec "${spec}")
  list(GET spec 0 name)
  list(GET spec 1 source)
  list(GET spec 2 block)
  list(GET spec 3 fence)
  add_test(NAME trellis_statechart_readme_excerpt.${name}
    COMMAND ${CMAKE_COMMAND}
      -DREADME=${PROJECT_SOURCE_DIR}/README.md
      -DSOURCE=${PROJECT_SOURCE_DIR}/${source}
      -DFENCE=${fence}
      "-DHEADING=## Statecharts"
      -DBLOCK=${block}
      -P ${PROJECT_SOURCE_DIR}/cmake/CheckReadmeExcerpt.cmake)
  set_tests_properties(trellis_statechart_readme_excerpt.${name} PROPERTIES LABELS "statechart"
                                                                           TIMEOUT 60)
endforeach()

# The runners under threads and on the asynchronous executor (the TSan job runs these).
trellis_add_test_executable(trellis_statechart_concurrency_tests LAYERS statechart tbb
  ${CMAKE_CURRENT_LIST_DIR}/chart_concurrency_test.cpp)
add_test(NAME trellis_statechart_concurrency_tests COMMAND trellis_statechart_concurrency_tests)
set_tests_properties(trellis_statechart_concurrency_tests PROPERTIES LABELS "concurrency"
                                                                     TIMEOUT 600)
if(TRELLIS_SANITIZE STREQUAL "thread")
  # The same suppressions as trellis_concurrency_tests: see support/tsan.supp.
  set_tests_properties(trellis_statechart_concurrency_tests PROPERTIES
    ENVIRONMENT
      "TSAN_OPTIONS=suppressions=${CMAKE_CURRENT_LIST_DIR}/../support/tsan.supp:halt_on_error=1:second_deadlock_stack=1")
endif()

# Builder misuse fails to compile with a message that lists what is accepted.
trellis_add_compile_fail_tests(trellis_statechart_compile_fail ${CMAKE_CURRENT_LIST_DIR}/compile_fail
  "guard_wrong_signature|a chart guard must be callable as|20"
  "guard_not_bool|a chart guard must be callable as|20"
  "action_wrong_signature|a chart action must be callable as|20"
  "control|")
