# SPDX-License-Identifier: MIT
# The agent layer: the graph's run loop, lifecycle, retries, hooks, approvals and events on
# MemoryStore with a manual clock. Included from tests/CMakeLists.txt (after
# trellis_add_test_executable is defined).
trellis_add_test_executable(trellis_agent_tests LAYERS agent testing signals2 scxml ${CMAKE_CURRENT_LIST_DIR}/graph_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/effect_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/events_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/errors_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/diagram_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/step_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/subgraph_test.cpp)
find_package(OpenSSL REQUIRED)  # effect_test.cpp computes SHA-256 on its own, apart from the library
target_link_libraries(trellis_agent_tests PRIVATE OpenSSL::Crypto)
# Golden files are read from the source tree (where TRELLIS_UPDATE_GOLDEN=1 rewrites them),
# whatever the build or working directory.
target_compile_definitions(trellis_agent_tests PRIVATE
  TRELLIS_AGENT_GOLDEN_DIR="${CMAKE_CURRENT_LIST_DIR}/golden"
  TRELLIS_DOCS_DIR="${PROJECT_SOURCE_DIR}/docs")  # errors_test.cpp reads docs/errors.md
add_test(NAME trellis_agent_tests COMMAND trellis_agent_tests)
set_tests_properties(trellis_agent_tests PROPERTIES LABELS "agent" TIMEOUT 300)

# The behavioural suite over every store, when it is there.
include(${CMAKE_CURRENT_LIST_DIR}/store_tests.cmake OPTIONAL)

# Workers, timers and enqueue.
include(${CMAKE_CURRENT_LIST_DIR}/worker_tests.cmake)

# Fan-out of effects (issue 16).
include(${CMAKE_CURRENT_LIST_DIR}/fanout_tests.cmake)


# Effects under SIGKILL at every failpoint and at random times, on every persistent store.
include(${CMAKE_CURRENT_LIST_DIR}/effect_crash_tests.cmake)

# A state without JSON conversions fails to compile in one short diagnostic that says what to
# define.
trellis_add_compile_fail_tests(trellis_agent_compile_fail ${CMAKE_CURRENT_LIST_DIR}/compile_fail
  "state_without_json|agent::Graph<S> needs nlohmann::json conversions for S|25"
  "control|")

# Chaos: worker processes killed, stopped and skewed on a shared store.
include(${CMAKE_CURRENT_LIST_DIR}/chaos/chaos_tests.cmake)
