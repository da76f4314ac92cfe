# httplib::httplib: Debian's cpp-httplib (libcpp-httplib-dev), a header and a compiled library
# built with OpenSSL, zlib and Brotli support: code that includes httplib.h must define the same
# CPPHTTPLIB_* macros as the library was built with (pkg-config's cpp-httplib.pc says which), or
# the classes would not match. Used by trellis's web layer; installed beside trellisConfig.cmake,
# which includes it for the web component.
if(NOT TARGET httplib::httplib)
  find_path(TRELLIS_HTTPLIB_INCLUDE_DIR httplib.h DOC "cpp-httplib's header (Debian: libcpp-httplib-dev)")
  find_library(TRELLIS_HTTPLIB_LIBRARY cpp-httplib DOC "cpp-httplib's library (Debian: libcpp-httplib-dev)")
  if(TRELLIS_HTTPLIB_INCLUDE_DIR AND TRELLIS_HTTPLIB_LIBRARY)
    # The macros the library was built with, from its cpp-httplib.pc when pkg-config finds it
    # (the -D flags of its Cflags); else Debian 12's (0.11.4: OpenSSL, zlib, Brotli).
    set(_trellis_httplib_macros
      CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(_trellis_httplib_pc QUIET cpp-httplib)
      if(_trellis_httplib_pc_FOUND)
        set(_trellis_httplib_macros "")
        foreach(_flag IN LISTS _trellis_httplib_pc_CFLAGS_OTHER)
          if(_flag MATCHES "^-D(CPPHTTPLIB_.*)$")
            list(APPEND _trellis_httplib_macros "${CMAKE_MATCH_1}")
          endif()
        endforeach()
      endif()
    endif()
    add_library(httplib::httplib UNKNOWN IMPORTED)
    set_target_properties(httplib::httplib PROPERTIES
      IMPORTED_LOCATION "${TRELLIS_HTTPLIB_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${TRELLIS_HTTPLIB_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "${_trellis_httplib_macros}")
  endif()
endif()
