# cmake -P script behind the trellis.consumer.* tests (see ConsumerTests.cmake).
#   MODE=find_package      install the build tree into WORK_DIR/prefix, build
#                          tests/find_package against it with find_package(trellis CONFIG)
#   MODE=add_subdirectory  build tests/add_subdirectory, which add_subdirectory()s SOURCE_DIR
#   MODE=reactive_only     install as for find_package, build tests/find_package_reactive
#                          (COMPONENTS reactive machine) with find_package disabled for TBB,
#                          Boost, nlohmann_json, OpenSSL and SQLite3, and check that the
#                          compiler's dependency output (-MD, read back with `ninja -t deps`)
#                          and the link line name none of them (needs the Ninja generator)
# Then run the consumer; any failing step fails the test.

cmake_minimum_required(VERSION 3.25)

foreach(_var MODE SOURCE_DIR BINARY_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "RunConsumerTest.cmake: -D${_var}=... is required")
  endif()
endforeach()

function(run_step what)
  message(STATUS "[consumer ${MODE}] ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc COMMAND_ECHO STDOUT)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "[consumer ${MODE}] ${what} failed (${_rc})")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(_configure
  ${CMAKE_COMMAND} -B "${WORK_DIR}/build" -G "${GENERATOR}"
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_BUILD_TYPE=Debug
  -DCMAKE_CXX_FLAGS_DEBUG=-O0  # fast to build; the consumer only checks that it links and runs
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
)
if(MAKE_PROGRAM)
  list(APPEND _configure -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()

if(MODE STREQUAL "find_package" OR MODE STREQUAL "reactive_only")
  set(_install ${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${WORK_DIR}/prefix")
  if(CONFIG)
    list(APPEND _install --config ${CONFIG})
  endif()
  run_step("install trellis into ${WORK_DIR}/prefix" ${_install})
endif()
if(MODE STREQUAL "reactive_only")
  if(NOT GENERATOR STREQUAL "Ninja")
    message(FATAL_ERROR "[consumer reactive_only] needs the Ninja generator, not ${GENERATOR}")
  endif()
  set(_disabled "")
  foreach(_pkg TBB Boost nlohmann_json OpenSSL SQLite3 PostgreSQL pugixml)
    list(APPEND _disabled -DCMAKE_DISABLE_FIND_PACKAGE_${_pkg}=ON)
  endforeach()
  run_step("configure" ${_configure} -S "${SOURCE_DIR}/tests/find_package_reactive"
           -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix ${_disabled})
elseif(MODE STREQUAL "find_package")
  run_step("configure" ${_configure} -S "${SOURCE_DIR}/tests/find_package"
           -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DEXPECTED_PREFIX=${WORK_DIR}/prefix)
elseif(MODE STREQUAL "add_subdirectory")
  run_step("configure" ${_configure} -S "${SOURCE_DIR}/tests/add_subdirectory"
           -DTRELLIS_SOURCE_DIR=${SOURCE_DIR})
else()
  message(FATAL_ERROR "RunConsumerTest.cmake: unknown MODE '${MODE}'")
endif()

run_step("build" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("run" "${WORK_DIR}/build/consumer")

if(MODE STREQUAL "reactive_only")
  set(_ninja ninja)
  if(MAKE_PROGRAM)
    set(_ninja "${MAKE_PROGRAM}")
  endif()
  execute_process(COMMAND "${_ninja}" -C "${WORK_DIR}/build" -t deps
                  OUTPUT_VARIABLE _deps RESULT_VARIABLE _rc)
  execute_process(COMMAND "${_ninja}" -C "${WORK_DIR}/build" -t commands consumer
                  OUTPUT_VARIABLE _commands RESULT_VARIABLE _rc2)
  if(NOT _rc EQUAL 0 OR NOT _rc2 EQUAL 0 OR NOT _deps MATCHES "trellis/reactive/")
    message(FATAL_ERROR "[consumer reactive_only] no dependency output to check:\n${_deps}")
  endif()
  string(REGEX MATCH "[^\n]*-o consumer[^\n]*" _link "${_commands}")
  if(NOT _link)
    message(FATAL_ERROR "[consumer reactive_only] no link line in:\n${_commands}")
  endif()
  message(STATUS "[consumer reactive_only] link line: ${_link}")
  # Headers: a package's own include folder (trellis's own tbb_fwd.hpp is not one); the link
  # line: any library of those packages.
  set(_deps_pattern "(^|/)(oneapi|tbb|boost|nlohmann|openssl)/|sqlite3[.]h|pugixml")
  set(_link_pattern "tbb|boost|nlohmann|ssl|crypto|sqlite|pugixml")
  foreach(_what IN ITEMS deps link)
    string(TOLOWER "${_${_what}}" _text)
    string(REGEX MATCHALL "[^\n]*(${_${_what}_pattern})[^\n]*" _hits "${_text}")
    if(_hits)
      message(FATAL_ERROR "[consumer reactive_only] the ${_what} name a package it must not "
                          "need:\n${_hits}")
    endif()
  endforeach()
  message(STATUS "[consumer reactive_only] neither the headers read nor the link line name "
                 "oneTBB, Boost, nlohmann_json, OpenSSL, SQLite or pugixml")
endif()
