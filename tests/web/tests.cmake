# SPDX-License-Identifier: MIT
# The web layer: the operator console served for real on 127.0.0.1 and asked by cpp-httplib's
# client; what it parses from requests. Included from tests/CMakeLists.txt.
trellis_add_test_executable(trellis_web_tests LAYERS web agent cli
  ${CMAKE_CURRENT_LIST_DIR}/console_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/forms_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tls_test.cpp)
# tls_test.cpp makes its certificate with libcrypto; httplib's SSL client calls libssl.
target_link_libraries(trellis_web_tests PRIVATE httplib::httplib OpenSSL::SSL OpenSSL::Crypto)
add_test(NAME trellis_web_tests COMMAND trellis_web_tests)
# "concurrency": .ci/run's TSan phase runs it too (the server's threads, sessions, stop()).
# cpp-httplib's library is not instrumented: its threads and locks are seen through TSan's
# pthread interceptors, what it does inside between them is not checked.
set_tests_properties(trellis_web_tests PROPERTIES LABELS "web;concurrency" TIMEOUT 300)
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

# The console in a real browser: headless Chromium driven by Selenium (Debian's chromium,
# chromium-driver, python3-selenium, for Debian's own python3), over the examples' runs.
# Screenshots go to <build>/screenshots (scripts/screenshots.sh copies them to docs/images/).
# Reported as skipped (77) where Selenium or Chromium is missing.
if(TRELLIS_BUILD_EXAMPLES)
  find_program(TRELLIS_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(TRELLIS_SYSTEM_PYTHON3)
    add_test(NAME trellis_web_browser
      COMMAND ${TRELLIS_SYSTEM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/browser_test.py
              $<TARGET_FILE:trellis_command> $<TARGET_FILE:draft_review_revise>
              $<TARGET_FILE:refund_agent> ${CMAKE_CURRENT_LIST_DIR}/../cli/graphs/gated.yaml
              ${PROJECT_BINARY_DIR}/screenshots)
    set_tests_properties(trellis_web_browser PROPERTIES LABELS "browser" TIMEOUT 300
                                                        SKIP_RETURN_CODE 77)
  endif()
endif()
