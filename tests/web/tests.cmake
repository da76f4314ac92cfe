# SPDX-License-Identifier: MIT
# The web layer: the operator console served for real on 127.0.0.1 and asked by cpp-httplib's
# client; what it parses from requests. Included from tests/CMakeLists.txt.
trellis_add_test_executable(trellis_web_tests LAYERS web agent cli
  ${CMAKE_CURRENT_LIST_DIR}/console_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/forms_test.cpp)
target_link_libraries(trellis_web_tests PRIVATE httplib::httplib)
add_test(NAME trellis_web_tests COMMAND trellis_web_tests)
set_tests_properties(trellis_web_tests PROPERTIES LABELS "web" TIMEOUT 300)
