# One CMake target per layer (design.md, "Layers and targets"), each linking only what it
# needs, so that a layer reaching upward fails to build:
#
#  - Every target sees only its own headers and those of the targets it links. The headers all
#    live in include/trellis/<folder>/, but a target's build include directory is its own
#    root, build/include-roots/<name>/, holding symbolic links to the folders it owns; linking
#    a target adds that target's root. An #include of a layer the target does not link is
#    "No such file" at compile time, not a silent dependency. Installed, every header goes to
#    one include/ directory as before.
#  - A target's PUBLIC links are the layers below it and the packages its headers need;
#    PRIVATE links are what only its compiled code needs (a static archive still exports them
#    as link-only dependencies).
#
# trellis_add_layer(<name>
#   [SOURCES <src/...cpp>...]        compiled code; none: an INTERFACE (header-only) target
#   [HEADERS <include/ paths>...]    folders or files under include/ that this target owns
#   [LAYERS <name>...]               the trellis layers it builds on (PUBLIC)
#   [PUBLIC <target>...]             packages its headers need
#   [PRIVATE <target>...])           packages only its sources need
# defines the target trellis_<name> with the alias trellis::<name> (EXPORT_NAME <name>), and
# records the layer in the global TRELLIS_LAYERS list and its dependencies in
# TRELLIS_LAYER_<name>_LAYERS (trellisConfig.cmake uses the same closure).
# The build include directory of `target` (an include root, see above) holding links to the
# given paths under include/; added PUBLIC (INTERFACE for a header-only target).
function(trellis_layer_include_root target)
  set(root "${PROJECT_BINARY_DIR}/include-roots/${target}")
  foreach(rel IN LISTS ARGN)
    if(NOT EXISTS "${PROJECT_SOURCE_DIR}/include/${rel}")
      message(FATAL_ERROR "trellis: ${target} owns include/${rel}, which does not exist")
    endif()
    get_filename_component(parent "${root}/${rel}" DIRECTORY)
    file(MAKE_DIRECTORY "${parent}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/include/${rel}" "${root}/${rel}" SYMBOLIC)
  endforeach()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    set(scope INTERFACE)
  else()
    set(scope PUBLIC)
  endif()
  target_include_directories(${target} ${scope}
    $<BUILD_INTERFACE:${root}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endfunction()

function(trellis_add_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;HEADERS;LAYERS;PUBLIC;PRIVATE")
  set(target trellis_${name})
  set(layer_targets "")
  foreach(layer IN LISTS arg_LAYERS)
    list(APPEND layer_targets trellis::${layer})
  endforeach()

  if(arg_SOURCES)
    add_library(${target} STATIC ${arg_SOURCES})
    set(scope PUBLIC)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_link_libraries(${target} PRIVATE ${arg_PRIVATE})
    trellis_set_warnings(${target})
    trellis_set_sanitizers(${target})
    if(TRELLIS_UNITY_BUILD)
      set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
      # A source included into a unity file is, to GCC, a header: a class holding a type of its
      # anonymous namespace is then reported (-Wsubobject-linkage), though each is one file's.
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
      endif()
    endif()
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
    if(arg_PRIVATE)
      message(FATAL_ERROR "trellis_add_layer(${name}): PRIVATE needs SOURCES")
    endif()
  endif()
  add_library(trellis::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_compile_features(${target} ${scope} cxx_std_20)
  if(arg_HEADERS)
    trellis_layer_include_root(${target} ${arg_HEADERS})
  endif()
  target_link_libraries(${target} ${scope} ${layer_targets} ${arg_PUBLIC})

  set_property(GLOBAL APPEND PROPERTY TRELLIS_LAYERS ${name})
  set_property(GLOBAL PROPERTY TRELLIS_LAYER_${name}_LAYERS ${arg_LAYERS})
  set_property(GLOBAL PROPERTY TRELLIS_LAYER_${name}_HEADERS ${arg_HEADERS})
  # The packages behind its links, as trellisConfig.cmake finds them (Threads::Threads ->
  # Threads, SQLite::SQLite3 -> SQLite3, TBB::tbb -> TBB, ...).
  set(packages "")
  foreach(dep IN LISTS arg_PUBLIC arg_PRIVATE)
    string(REGEX REPLACE "::.*" "" package "${dep}")
    if(package STREQUAL "SQLite")
      set(package SQLite3)
    endif()
    list(APPEND packages ${package})
  endforeach()
  set_property(GLOBAL PROPERTY TRELLIS_LAYER_${name}_PACKAGES ${packages})
endfunction()

# The component table of trellisConfig.cmake (components, their layers and their packages),
# from what trellis_add_layer() recorded, into the variable named `out`.
function(trellis_component_table out)
  get_property(layers GLOBAL PROPERTY TRELLIS_LAYERS)
  set(text "set(_trellis_components ${layers})\n")
  foreach(layer IN LISTS layers)
    get_property(deps GLOBAL PROPERTY TRELLIS_LAYER_${layer}_LAYERS)
    get_property(packages GLOBAL PROPERTY TRELLIS_LAYER_${layer}_PACKAGES)
    string(APPEND text "set(_trellis_layers_${layer} ${deps})\n")
    string(APPEND text "set(_trellis_packages_${layer} ${packages})\n")
  endforeach()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
