# SPDX-License-Identifier: MIT
# Graph files (issue 16): each part's suite in its own file.
include(${CMAKE_CURRENT_LIST_DIR}/expression_tests.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/load_tests.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/action_tests.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/file_graph_tests.cmake OPTIONAL)
