# cmake -P script behind the trellis.consumer.* tests (see ConsumerTests.cmake).
#   MODE=find_package      install the build tree into WORK_DIR/prefix, build
#                          tests/find_package against it with find_package(trellis CONFIG)
#   MODE=add_subdirectory  build tests/add_subdirectory, which add_subdirectory()s SOURCE_DIR
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

if(MODE STREQUAL "find_package")
  set(_install ${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${WORK_DIR}/prefix")
  if(CONFIG)
    list(APPEND _install --config ${CONFIG})
  endif()
  run_step("install trellis into ${WORK_DIR}/prefix" ${_install})
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
