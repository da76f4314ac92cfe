# SPDX-License-Identifier: MIT
# The base layer: the error root and shared errors, the failpoint registry. Included from
# tests/CMakeLists.txt (after trellis_add_test_executable is defined).
trellis_add_test_executable(trellis_base_tests LAYERS base
  ${CMAKE_CURRENT_LIST_DIR}/error_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/failpoint_test.cpp)
add_test(NAME trellis_base_tests COMMAND trellis_base_tests)
set_tests_properties(trellis_base_tests PROPERTIES LABELS "base" TIMEOUT 120)
