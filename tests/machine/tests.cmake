# SPDX-License-Identifier: MIT
# The pure machine layer: enumerations, transition tables, exhaustive testing and diagrams.
# Included from tests/CMakeLists.txt (after trellis_doctest_main is defined).
find_package(nlohmann_json 3 REQUIRED CONFIG)

add_executable(trellis_machine_tests
  ${CMAKE_CURRENT_LIST_DIR}/diagram_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/enumeration_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explore_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/testing_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transition_table_test.cpp)
target_link_libraries(trellis_machine_tests PRIVATE trellis::machine trellis::testing trellis::json
                                                    trellis_doctest_main)
target_include_directories(trellis_machine_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../support
                                                  ${PROJECT_SOURCE_DIR}/examples)
# Golden files are read from the source tree (where TRELLIS_UPDATE_GOLDEN=1 rewrites them),
# whatever the build or working directory.
target_compile_definitions(trellis_machine_tests PRIVATE
  TRELLIS_MACHINE_GOLDEN_DIR="${CMAKE_CURRENT_LIST_DIR}/golden")
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_machine_tests)
endif()
add_test(NAME trellis_machine_tests COMMAND trellis_machine_tests)
set_tests_properties(trellis_machine_tests PROPERTIES LABELS "machine" TIMEOUT 120)

# Misuse of the machine layer fails to compile with a message that suggests the fix.
trellis_add_compile_fail_tests(trellis_machine_compile_fail ${CMAKE_CURRENT_LIST_DIR}/compile_fail
  "enum_listed_twice|list each value once"
  "matrix_not_enumerated|declare TRELLIS_ENUM"
  "guard_not_predicate|a guard must be callable"
  "row_discarded|a row is added by its .to(phase) or .stay() only"
  "explore_without_hash|give the options a hash|20"
  "transitions_without_adapter|#include <trellis/signals2/transitions.hpp>|30"
  "enum_json_without_adapter|#include <trellis/json/enumeration.hpp>|40"
  "control|"
  "transitions_with_adapter|"
  "machine_headers_std_only|")
