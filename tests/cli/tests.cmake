# SPDX-License-Identifier: MIT
# The cli layer: the `trellis` command driven from a shell script, against FileStores and SQLite
# stores made by a small program that embeds the same commands through cli::main (it links the
# graph; `trellis` does not). Included from tests/CMakeLists.txt.
add_executable(trellis_cli_test_program ${CMAKE_CURRENT_LIST_DIR}/cli_test_program.cpp)
target_link_libraries(trellis_cli_test_program PRIVATE trellis::cli)
if(COMMAND trellis_set_warnings)
  trellis_set_warnings(trellis_cli_test_program)
endif()

find_program(TRELLIS_BASH bash REQUIRED)
find_program(TRELLIS_PYTHON3 python3 REQUIRED)
#   codes    every documented exit code, -o json documents, a mistyped store creates nothing
#   story    run, approve from `trellis`, resume from the program; reconcile a cut-off effect;
#            fork; history --diff; events
#   bulk     cancel (a running run from another process, bulk with --dry-run/--yes), delete, gc
#   worker   enqueue (priority, --at), runs ls's due and priority, worker --drain (claim order,
#            an approval expiring), a foreign run, a decision picked up, SIGTERM once and twice
#   graphs   graph files (tests/cli/graphs): validate, run FILE (inputs, ids, the default store),
#            approve then --graph FILE resume, enqueue and worker with --graph, step FILE (dry),
#            draw FILE
foreach(kind IN ITEMS file sqlite)
  foreach(mode IN ITEMS codes story bulk worker graphs)
    add_test(NAME trellis_cli.${kind}.${mode}
      COMMAND ${TRELLIS_BASH} ${CMAKE_CURRENT_LIST_DIR}/cli_test.sh
              $<TARGET_FILE:trellis_command> $<TARGET_FILE:trellis_cli_test_program> ${kind} ${mode})
    set_tests_properties(trellis_cli.${kind}.${mode} PROPERTIES LABELS "cli" TIMEOUT 120)
  endforeach()
endforeach()

# The output parts written by hand (src/cli/cli_support.hpp is private: included by path), and
# what enqueue and worker ask of a graph runner.
trellis_add_test_executable(trellis_cli_tests LAYERS cli ${CMAKE_CURRENT_LIST_DIR}/output_test.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/graph_runner_test.cpp)
target_include_directories(trellis_cli_tests PRIVATE ${PROJECT_SOURCE_DIR}/src/cli)
add_test(NAME trellis_cli_tests COMMAND trellis_cli_tests)
set_tests_properties(trellis_cli_tests PROPERTIES LABELS "cli" TIMEOUT 60)
