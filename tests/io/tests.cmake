# SPDX-License-Identifier: MIT
# The durable-I/O toolkit (src/io, internal): directories, atomic replace, the checksummed line
# log, the file lock with its holder, UTC time texts, the environment (PATH, the user). Included from tests/CMakeLists.txt (after
# trellis_add_test_executable is defined).
trellis_add_test_executable(trellis_io_tests LAYERS persist
  ${CMAKE_CURRENT_LIST_DIR}/atomic_file_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/directory_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/environment_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/file_lock_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/json_writable_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/line_log_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/utc_time_test.cpp)
# The toolkit's private headers; its objects are in trellis_persist, which the executable links.
find_package(OpenSSL REQUIRED)  # persist_test_support.hpp hashes hand-built files
target_link_libraries(trellis_io_tests PRIVATE OpenSSL::Crypto)
target_link_libraries(trellis_io_tests PRIVATE trellis_io_headers)
add_test(NAME trellis_io_tests COMMAND trellis_io_tests)
set_tests_properties(trellis_io_tests PROPERTIES LABELS "io" TIMEOUT 300)
