# Target-scoped build settings for trellis's own targets (library, tests, benchmarks, examples).
# Nothing here is set globally or through INTERFACE/PUBLIC compile options, so a project that
# consumes trellis never inherits its warnings or -Werror.

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  message(FATAL_ERROR "trellis supports g++ and clang++ on Linux/POSIX, not ${CMAKE_CXX_COMPILER_ID}")
endif()

set(_trellis_sanitizers_known "" address thread)
if(NOT TRELLIS_SANITIZE IN_LIST _trellis_sanitizers_known)
  message(FATAL_ERROR
    "TRELLIS_SANITIZE='${TRELLIS_SANITIZE}' is not one of: '' (none), address (ASan+UBSan), thread")
endif()
if(TRELLIS_SANITIZE STREQUAL "address")
  set(_trellis_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined
                              -fno-omit-frame-pointer)
elseif(TRELLIS_SANITIZE STREQUAL "thread")
  set(_trellis_sanitize_flags -fsanitize=thread -fno-omit-frame-pointer)
else()
  set(_trellis_sanitize_flags "")
endif()

# -Wall -Wextra -Wpedantic on one target, PRIVATE; -Werror when TRELLIS_WARNINGS_AS_ERRORS.
function(trellis_set_warnings target)
  get_target_property(_done ${target} TRELLIS_WARNINGS_SET)
  if(_done)
    return()
  endif()
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(TRELLIS_WARNINGS_AS_ERRORS)
    set_target_properties(${target} PROPERTIES COMPILE_WARNING_AS_ERROR ON)
  endif()
  set_target_properties(${target} PROPERTIES TRELLIS_WARNINGS_SET TRUE)
endfunction()

# The TRELLIS_SANITIZE flags on one target: compiled in PRIVATE; linked PRIVATE for an
# executable, and INTERFACE for a static library, because whatever links an instrumented
# archive needs the sanitizer runtime (that is the only flag a consumer ever gets, and only
# from a trellis it built with TRELLIS_SANITIZE itself).
function(trellis_set_sanitizers target)
  if(NOT _trellis_sanitize_flags)
    return()
  endif()
  get_target_property(_done ${target} TRELLIS_SANITIZERS_SET)
  if(_done)
    return()
  endif()
  target_compile_options(${target} PRIVATE ${_trellis_sanitize_flags})
  if(TRELLIS_SANITIZE STREQUAL "address")
    # Bounds-checked standard containers: no ABI change, cheap next to ASan itself.
    target_compile_definitions(${target} PRIVATE _GLIBCXX_ASSERTIONS)
  endif()
  get_target_property(_type ${target} TYPE)
  if(_type STREQUAL "STATIC_LIBRARY" OR _type STREQUAL "OBJECT_LIBRARY")
    target_link_options(${target} INTERFACE ${_trellis_sanitize_flags})
  else()
    target_link_options(${target} PRIVATE ${_trellis_sanitize_flags})
  endif()
  set_target_properties(${target} PROPERTIES TRELLIS_SANITIZERS_SET TRUE)
endfunction()

# Both of the above on every compiled target defined in `dir` and its subdirectories, so the
# settings hold for tests/, bench/ and examples/ whether or not their CMakeLists call them.
function(trellis_apply_settings_to_directory dir)
  get_property(_targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_t IN LISTS _targets)
    get_target_property(_type ${_t} TYPE)
    if(_type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      trellis_set_warnings(${_t})
      trellis_set_sanitizers(${_t})
    endif()
  endforeach()
  get_property(_subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    trellis_apply_settings_to_directory("${_sub}")
  endforeach()
endfunction()
