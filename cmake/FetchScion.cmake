# SPDX-License-Identifier: MIT
# Fetches the SCXML conformance suite (npm package @scion-scxml/test-framework 2.0.16,
# Apache-2.0) into DEST/package: run as `cmake -DDEST=<dir> [-DTARBALL=<tgz>] -P FetchScion.cmake`
# by the ctest fixture `trellis_scion_fetch` (tests/scxml/tests.cmake), never at configure time.
#
# - DEST/package is reused when its stamp names the pinned SHA-512 (no network then).
# - TARBALL (the TRELLIS_SCION_TARBALL option) names a tarball already on disk: offline builds.
# - Otherwise `npm pack` fetches the tarball (npm's ordinary client, from its configured
#   registry) into DEST. Where npm is missing or the fetch fails, the script prints a line
#   starting "SKIPPED: " (the test's SKIP_REGULAR_EXPRESSION: ctest reports "Skipped", never a
#   pass) and stops.
# - The tarball must match the pinned SHA-512 (npm's dist.integrity for 2.0.16); a mismatch is
#   an error, not a skip. It is unpacked with file(ARCHIVE_EXTRACT) into a scratch directory and
#   moved into place, so an interrupted run leaves no half-extracted suite behind.
cmake_minimum_required(VERSION 3.18)

set(scion_spec "@scion-scxml/test-framework@2.0.16")
set(scion_file "scion-scxml-test-framework-2.0.16.tgz")
set(scion_sha512
    "e6b45de427452d4ce63da3b8dcd49a9819a1abab96ff49149949de127a9149b023d0588554020d7750df69d524744093fb11cb011089654ee67900f89ea6322b")

if(NOT DEST)
  message(FATAL_ERROR "FetchScion.cmake: pass -DDEST=<directory>")
endif()
set(stamp "${DEST}/package/.trellis-sha512")

if(EXISTS "${stamp}")
  file(READ "${stamp}" have)
  string(STRIP "${have}" have)
  if(have STREQUAL scion_sha512)
    message(STATUS "SCXML conformance suite: reusing ${DEST}/package")
    return()
  endif()
endif()

file(MAKE_DIRECTORY "${DEST}")
if(TARBALL)
  if(NOT EXISTS "${TARBALL}")
    message(FATAL_ERROR "TRELLIS_SCION_TARBALL names '${TARBALL}', which does not exist")
  endif()
  set(tarball "${TARBALL}")
else()
  set(tarball "${DEST}/${scion_file}")
  if(NOT EXISTS "${tarball}")
    find_program(npm_program npm)
    if(NOT npm_program)
      message("SKIPPED: npm not found: the SCXML conformance suite is skipped "
              "(install npm, or pass -DTRELLIS_SCION_TARBALL=<path to ${scion_file}>)")
      return()
    endif()
    execute_process(
      COMMAND "${npm_program}" pack "${scion_spec}" --pack-destination "${DEST}" --loglevel=error
      RESULT_VARIABLE npm_result
      OUTPUT_VARIABLE npm_output
      ERROR_VARIABLE npm_output
      TIMEOUT 120)
    if(NOT npm_result EQUAL 0 OR NOT EXISTS "${tarball}")
      string(STRIP "${npm_output}" npm_output)
      string(REGEX MATCH "^[^\n]*" npm_output "${npm_output}")
      message("SKIPPED: npm could not fetch ${scion_spec} (registry unreachable?): the SCXML "
              "conformance suite is skipped. npm said (${npm_result}): ${npm_output}")
      file(REMOVE "${tarball}")
      return()
    endif()
  endif()
endif()

file(SHA512 "${tarball}" got)
if(NOT got STREQUAL scion_sha512)
  if(NOT TARBALL)
    file(REMOVE "${tarball}")
  endif()
  message(FATAL_ERROR "${tarball}: SHA-512 ${got} is not the pinned ${scion_sha512} of "
                      "${scion_spec}: refusing to use it")
endif()

set(scratch "${DEST}/extract.tmp")
file(REMOVE_RECURSE "${scratch}" "${DEST}/package")
file(ARCHIVE_EXTRACT INPUT "${tarball}" DESTINATION "${scratch}")
if(NOT IS_DIRECTORY "${scratch}/package/test")
  message(FATAL_ERROR "${tarball}: no package/test directory inside")
endif()
file(WRITE "${scratch}/package/.trellis-sha512" "${scion_sha512}\n")
file(RENAME "${scratch}/package" "${DEST}/package")
file(REMOVE_RECURSE "${scratch}")
message(STATUS "SCXML conformance suite: ${scion_spec} unpacked into ${DEST}/package")
