# SPDX-License-Identifier: MIT
# Compiles one source with -fsyntax-only -Werror (so that a warning such as a discarded
# [[nodiscard]] result fails too) and checks the outcome:
#   EXPECT empty      -> the source must compile;
#   EXPECT non-empty  -> it must fail to compile, with EXPECT in the diagnostics;
#   MAX_LINES set     -> and the diagnostics must be shorter than that many lines (a
#                        static_assert that says what to add, not pages of template errors).
# Inputs (-D): COMPILER, SOURCE, INCLUDE_DIRS ("|"-separated, since ";" would split the
# add_test argument), EXPECT, MAX_LINES (optional).
cmake_minimum_required(VERSION 3.20)

foreach(var COMPILER SOURCE INCLUDE_DIRS)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check.cmake: ${var} is not set")
  endif()
endforeach()

string(REPLACE "|" ";" include_list "${INCLUDE_DIRS}")
set(include_flags)
foreach(dir IN LISTS include_list)
  if(NOT dir STREQUAL "")
    list(APPEND include_flags "-I${dir}")
  endif()
endforeach()

execute_process(
  COMMAND "${COMPILER}" -std=c++20 -fsyntax-only -Werror ${include_flags} "${SOURCE}"
  RESULT_VARIABLE result
  OUTPUT_VARIABLE output
  ERROR_VARIABLE output)

if("${EXPECT}" STREQUAL "")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${SOURCE} should compile but did not:\n${output}")
  endif()
  message(STATUS "${SOURCE} compiles, as it should")
  return()
endif()

if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it should have failed with \"${EXPECT}\"")
endif()
string(FIND "${output}" "${EXPECT}" where)
if(where EQUAL -1)
  message(FATAL_ERROR
    "${SOURCE} failed to compile, but the diagnostics do not contain \"${EXPECT}\":\n${output}")
endif()
if(NOT "${MAX_LINES}" STREQUAL "")
  string(REGEX MATCHALL "\n" newlines "${output}")
  list(LENGTH newlines line_count)
  if(NOT line_count LESS MAX_LINES)
    message(FATAL_ERROR "${SOURCE} fails to compile with \"${EXPECT}\", but in ${line_count} "
                        "lines of diagnostics (fewer than ${MAX_LINES} expected):\n${output}")
  endif()
endif()
message(STATUS "${SOURCE} fails to compile with \"${EXPECT}\", as it should")
