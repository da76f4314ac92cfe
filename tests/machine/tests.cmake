# SPDX-License-Identifier: MIT
# The pure machine layer: enumerations, transition tables, exhaustive testing and diagrams.
# Included from tests/CMakeLists.txt (after trellis_doctest_main is defined).
find_package(nlohmann_json 3 REQUIRED CONFIG)

add_executable(trellis_machine_tests
  ${CMAKE_CURRENT_LIST_DIR}/diagram_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/doc_cycle_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/enumeration_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/phase_matrix_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/explore_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/testing_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/transition_table_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/typed_table_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vending_test.cpp)
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
  "enum_wrong_namespace|must be written in the namespace that declares app::Light|25"
  "matrix_not_enumerated|declare TRELLIS_ENUM"
  "guard_not_predicate|a guard must be callable"
  "row_discarded|a row is added by its .to(phase) or .stay() only"
  "row_dropped_typed|a row is added by its .to(phase) or .stay() only"
  "row_without_event|this row has no event|30"
  "row_two_updates|a row has one update|30"
  "on_type_not_alternative|not one of the event variant's alternatives|30"
  "explore_without_hash|give the options a hash|20"
  "transitions_without_adapter|#include <trellis/signals2/transitions.hpp>|30"
  "enum_json_without_adapter|#include <trellis/json/enumeration.hpp>|40"
  "control|"
  "transitions_with_adapter|"
  "machine_headers_std_only|")

# The README's sections on TRELLIS_ENUM, testing and diagrams: each example must be an exact
# excerpt of the test that runs it, and the Mermaid block the golden file the test compares.
foreach(spec IN ITEMS
    "enumeration|enumeration_test.cpp|## Enumerations: `TRELLIS_ENUM`|cpp"
    "phase_matrix|phase_matrix_test.cpp|### Matrix and golden files|cpp"
    "properties|testing_test.cpp|### Property checks|cpp"
    "exploration|vending_test.cpp|### Exploration|cpp"
    "diagram|diagram_test.cpp|## Diagrams|cpp"
    "diagram_mermaid|golden/vending.mmd|## Diagrams|mermaid")
  string(REPLACE "|" ";" spec "${spec}")
  list(GET spec 0 name)
  list(GET spec 1 source)
  list(GET spec 2 heading)
  list(GET spec 3 fence)
  add_test(NAME trellis_machine_readme_excerpt.${name}
    COMMAND ${CMAKE_COMMAND}
      -DREADME=${PROJECT_SOURCE_DIR}/README.md
      -DSOURCE=${CMAKE_CURRENT_LIST_DIR}/${source}
      "-DHEADING=${heading}"
      -DFENCE=${fence}
      -P ${PROJECT_SOURCE_DIR}/cmake/CheckReadmeExcerpt.cmake)
  set_tests_properties(trellis_machine_readme_excerpt.${name} PROPERTIES LABELS "machine"
                                                                         TIMEOUT 60)
endforeach()

# Property tests with RapidCheck (issue 12 §3): the doctest adapter trellis::rapidcheck, and
# generated event sequences run against machines and hand-written models.
trellis_add_test_executable(trellis_property_tests LAYERS machine rapidcheck
  ${CMAKE_CURRENT_LIST_DIR}/property_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/vending_property_test.cpp)
target_include_directories(trellis_property_tests PRIVATE ${PROJECT_SOURCE_DIR}/examples)
add_test(NAME trellis_property_tests COMMAND trellis_property_tests)
set_tests_properties(trellis_property_tests PROPERTIES LABELS "machine" TIMEOUT 120)
# The README's property test example is an exact excerpt of property_test.cpp.
add_test(NAME trellis_property_tests.readme_excerpt
  COMMAND ${CMAKE_COMMAND}
    -DREADME=${PROJECT_SOURCE_DIR}/README.md
    -DSOURCE=${CMAKE_CURRENT_LIST_DIR}/property_test.cpp
    "-DHEADING=### Property tests with RapidCheck"
    -P ${PROJECT_SOURCE_DIR}/cmake/CheckReadmeExcerpt.cmake)
set_tests_properties(trellis_property_tests.readme_excerpt PROPERTIES LABELS "machine" TIMEOUT 60)
