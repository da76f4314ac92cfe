# ctest cases that consume trellis the two ways a user would: find_package() against an
# installed copy, and add_subdirectory() of the source tree. Each configures and builds a tiny
# separate project (tests/find_package/, tests/add_subdirectory/) and runs it.

foreach(_mode IN ITEMS find_package add_subdirectory reactive_only)
  add_test(NAME trellis.consumer.${_mode}
    COMMAND ${CMAKE_COMMAND}
      -DMODE=${_mode}
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DBINARY_DIR=${PROJECT_BINARY_DIR}
      -DWORK_DIR=${PROJECT_BINARY_DIR}/consumer/${_mode}
      -DCONFIG=$<CONFIG>
      -DGENERATOR=${CMAKE_GENERATOR}
      -DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}
      -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
      -P ${PROJECT_SOURCE_DIR}/cmake/RunConsumerTest.cmake
  )
  set_tests_properties(trellis.consumer.${_mode} PROPERTIES LABELS consumer TIMEOUT 600)
endforeach()
