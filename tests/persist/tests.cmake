# SPDX-License-Identifier: MIT
# The persist/ file layer: sidecar codec and atomic writes, the lock, the journal, failpoints.
# Included from tests/CMakeLists.txt (after trellis_add_test_executable is defined).
find_package(OpenSSL REQUIRED)  # the tests hash hand-built files themselves

# A child process for the cross-process cases (lock holder, failpoint kills).
add_executable(trellis_persist_helper ${CMAKE_CURRENT_LIST_DIR}/persist_helper.cpp)
target_link_libraries(trellis_persist_helper PRIVATE trellis::trellis)
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_persist_helper)
endif()

trellis_add_test_executable(trellis_persist_tests
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
