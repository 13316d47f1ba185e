# kvblob_driver(TARGET [MAP file]): make a shared-library target a well-formed
# kvblob driver plugin: exports the entry alone (hidden visibility plus the
# version script), refuses undefined symbols at link time (-z defs), and is
# named libkvblob_<name>.so so the host finds it by short name. The same name
# reaches the sources as KVBLOB_DRIVER_NAME (a C string literal), so the name
# in the plugin table and the file name are given in one place (R-LOAD-6).
# Used by the bundled drivers and by vendors through find_package(kvblob).
function(kvblob_driver target)
  cmake_parse_arguments(ARG "" "MAP;NAME" "" ${ARGN})
  if(NOT ARG_MAP)
    # Set by kvblobConfig.cmake for an installed kvblob, by the top-level
    # CMakeLists.txt in the kvblob tree.
    if(NOT KVBLOB_PLUGIN_MAP)
      message(FATAL_ERROR "kvblob_driver(${target}): KVBLOB_PLUGIN_MAP is not set; use find_package(kvblob)")
    endif()
    set(ARG_MAP ${KVBLOB_PLUGIN_MAP})
  endif()
  if(NOT ARG_NAME)
    set(ARG_NAME ${target})
  endif()
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME "kvblob_${ARG_NAME}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LINK_DEPENDS ${ARG_MAP})
  target_compile_definitions(${target} PRIVATE KVBLOB_DRIVER_NAME="${ARG_NAME}")
  target_link_options(${target} PRIVATE "LINKER:--version-script=${ARG_MAP}" "LINKER:-z,defs")
endfunction()
