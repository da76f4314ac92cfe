# SPDX-License-Identifier: MIT
# The web layer: the operator console served for real on 127.0.0.1 and asked by cpp-httplib's
# client; what it parses from requests. Included from tests/CMakeLists.txt.
trellis_add_test_executable(trellis_web_tests LAYERS web agent cli
  ${CMAKE_CURRENT_LIST_DIR}/console_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/forms_test.cpp)
target_link_libraries(trellis_web_tests PRIVATE httplib::httplib)
add_test(NAME trellis_web_tests COMMAND trellis_web_tests)
set_tests_properties(trellis_web_tests PROPERTIES LABELS "web" TIMEOUT 300)
# forms_test.cpp checks that docs/errors.md documents the layer's codes.
target_compile_definitions(trellis_web_tests PRIVATE TRELLIS_DOCS_DIR="${PROJECT_SOURCE_DIR}/docs")

# A libFuzzer target for the request parsing (.ci/run's fuzz phase builds it in build/fuzz with
# clang++ and TRELLIS_SANITIZE=address, then runs it for a bounded time over fuzz_corpus/).
if(TRELLIS_FUZZ)
  target_compile_options(trellis_web PRIVATE -fsanitize=fuzzer-no-link)
  add_executable(trellis_fuzz_web_forms ${CMAKE_CURRENT_LIST_DIR}/fuzz_forms.cpp)
  target_link_libraries(trellis_fuzz_web_forms PRIVATE trellis::web)
  target_compile_options(trellis_fuzz_web_forms PRIVATE -fsanitize=fuzzer)
  target_link_options(trellis_fuzz_web_forms PRIVATE -fsanitize=fuzzer)
endif()
