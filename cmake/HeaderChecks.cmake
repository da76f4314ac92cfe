# Every public header compiles on its own, against only the target that owns it: for each
# header under a layer's include folders (detail/ excluded), a generated translation unit
# includes it twice (so a missing include guard fails too), and the layer's check library
# compiles those units linking that layer alone. A header that forgets an include, or reaches a
# layer its target does not link, breaks the build (target trellis_header_checks, built with
# the tests).
#
# A header that adapts a higher layer (the Boost.Signals2 edge of persist, say) names the
# extra layers it needs with
#   set_property(GLOBAL PROPERTY TRELLIS_HEADER_LAYERS_<path under include/> <layer>...)
#
# A header a layer names as a file (not a folder) is checked against that layer only, even when
# it lies in another layer's folder (trellis/testing/bench.hpp is bench_kit's, in testing's
# folder, and so is trellis/testing/rapidcheck.hpp, rapidcheck's;
# trellis/testing/transition_matrix.hpp is machine's).
add_custom_target(trellis_header_checks ALL)
get_property(_trellis_layers GLOBAL PROPERTY TRELLIS_LAYERS)
set(_trellis_owned_files "")
foreach(_layer IN LISTS _trellis_layers)
  get_property(_owned GLOBAL PROPERTY TRELLIS_LAYER_${_layer}_HEADERS)
  foreach(_rel IN LISTS _owned)
    if(NOT IS_DIRECTORY "${PROJECT_SOURCE_DIR}/include/${_rel}")
      list(APPEND _trellis_owned_files "${_rel}")
    endif()
  endforeach()
endforeach()
list(APPEND _trellis_layers trellis)
foreach(_layer IN LISTS _trellis_layers)
  if(_layer STREQUAL "trellis")
    set(_owned trellis/trellis.hpp)
    set(_target trellis)
  else()
    get_property(_owned GLOBAL PROPERTY TRELLIS_LAYER_${_layer}_HEADERS)
    set(_target trellis_${_layer})
  endif()
  set(_units "")
  set(_extra "")
  foreach(_rel IN LISTS _owned)
    if(IS_DIRECTORY "${PROJECT_SOURCE_DIR}/include/${_rel}")
      file(GLOB_RECURSE _headers RELATIVE "${PROJECT_SOURCE_DIR}/include"
           CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/${_rel}/*.hpp")
      if(_trellis_owned_files)
        list(REMOVE_ITEM _headers ${_trellis_owned_files})
      endif()
    else()
      set(_headers ${_rel})
    endif()
    foreach(_header IN LISTS _headers)
      if(_header MATCHES "/detail/")
        continue()
      endif()
      string(MAKE_C_IDENTIFIER "${_header}" _id)
      set(_unit "${PROJECT_BINARY_DIR}/header_checks/${_id}.cpp")
      file(CONFIGURE OUTPUT "${_unit}"
           CONTENT "#include <${_header}>\n#include <${_header}>\n")
      get_property(_needs GLOBAL PROPERTY TRELLIS_HEADER_LAYERS_${_header})
      if(_needs)
        # A header with extra needs gets a library of its own.
        add_library(trellis_header_check_${_id} OBJECT "${_unit}")
        list(TRANSFORM _needs PREPEND trellis:: OUTPUT_VARIABLE _needs)
        target_link_libraries(trellis_header_check_${_id} PRIVATE ${_target} ${_needs})
        trellis_set_warnings(trellis_header_check_${_id})
        add_dependencies(trellis_header_checks trellis_header_check_${_id})
      else()
        list(APPEND _units "${_unit}")
      endif()
    endforeach()
  endforeach()
  if(_units)
    add_library(trellis_header_check_${_layer} OBJECT ${_units})
    target_link_libraries(trellis_header_check_${_layer} PRIVATE ${_target})
    trellis_set_warnings(trellis_header_check_${_layer})
    add_dependencies(trellis_header_checks trellis_header_check_${_layer})
  endif()
endforeach()
