# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#
# mstar_add_plugin(NAME
#                  SOURCES file.cc...
#                  MANIFEST plugin.toml.in
#                  [LINK_LIBRARIES lib...]
#                  [TORCH]
#                  [OUTPUT_DIRECTORY dir]
#                  [NO_INSTALL])
#
# Builds a plugin library NAME (lib<NAME>.so) against the SDK with hidden visibility and an export
# map that exports only mstar_plugin_entry, refuses undefined symbols at link time (a plugin
# reaches the host only through the host table), and writes the manifest beside the library as
# <NAME>.toml. In the manifest template these placeholders are replaced:
#   @MSTAR_PLUGIN_LIBRARY@        the library's file name
#   @MSTAR_PLUGIN_TORCH_VERSION@  the LibTorch version the plugin is built against (TORCH only)
#   @MSTAR_PLUGIN_CXX11_ABI@      true/false: the _GLIBCXX_USE_CXX11_ABI of that LibTorch
# TORCH links LibTorch (find_package(Torch)); the runtime checks the manifest's [requires] against
# its own LibTorch before loading. The library and manifest also install to
# lib/mstar/plugins/<NAME>/, unless NO_INSTALL is given or MSTAR_PLUGIN_NO_INSTALL is set where the
# function is called (test plugins, samples).

set(_MSTAR_PLUGIN_CMAKE_DIR ${CMAKE_CURRENT_LIST_DIR} CACHE INTERNAL "Where MstarPlugin.cmake lives")

function(mstar_add_plugin NAME)
  cmake_parse_arguments(ARG "TORCH;NO_INSTALL" "MANIFEST;OUTPUT_DIRECTORY" "SOURCES;LINK_LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "mstar_add_plugin(${NAME}): SOURCES is required")
  endif()
  if(NOT ARG_MANIFEST)
    message(FATAL_ERROR "mstar_add_plugin(${NAME}): MANIFEST is required")
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set(out_dir ${ARG_OUTPUT_DIRECTORY})
  elseif(MSTAR_PLUGIN_OUTPUT_DIR)
    set(out_dir ${MSTAR_PLUGIN_OUTPUT_DIR}/${NAME})
  else()
    set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${NAME})
  endif()

  add_library(${NAME} MODULE ${ARG_SOURCES})
  target_link_libraries(${NAME} PRIVATE mstar::sdk ${ARG_LINK_LIBRARIES})
  set(map_file ${CMAKE_CURRENT_BINARY_DIR}/${NAME}.map)
  configure_file(${_MSTAR_PLUGIN_CMAKE_DIR}/mstar_plugin.map.in ${map_file} COPYONLY)
  set_target_properties(${NAME} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${out_dir}
    LINK_DEPENDS ${map_file})
  target_link_options(${NAME} PRIVATE "LINKER:--version-script=${map_file}")
  if(NOT MSTAR_SANITIZE AND NOT CMAKE_CXX_FLAGS MATCHES "-fsanitize")
    target_link_options(${NAME} PRIVATE "LINKER:--no-undefined")
  endif()

  set(MSTAR_PLUGIN_TORCH_VERSION "")
  set(MSTAR_PLUGIN_CXX11_ABI "true")
  if(ARG_TORCH)
    if(NOT TARGET torch)
      find_package(Torch REQUIRED)
    endif()
    target_link_libraries(${NAME} PRIVATE ${TORCH_LIBRARIES})
    set(MSTAR_PLUGIN_TORCH_VERSION ${Torch_VERSION})
    if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
      set(MSTAR_PLUGIN_CXX11_ABI "false")
    endif()
    # With a CUDA LibTorch, the SDK's TorchStreamScope runs ATen work on the host's stream and
    # TorchCapturePools routes a capture's allocations into the graph's pool
    # (mstar/sdk/torch_capture.hpp); without this both are no-ops or refuse.
    if(TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
      target_compile_definitions(${NAME} PRIVATE MSTAR_SDK_TORCH_CUDA=1)
    endif()
  endif()
  set(MSTAR_PLUGIN_LIBRARY "$<TARGET_FILE_NAME:${NAME}>")
  get_filename_component(manifest_in ${ARG_MANIFEST} ABSOLUTE)
  set(manifest_stage ${CMAKE_CURRENT_BINARY_DIR}/${NAME}.toml.stage)
  configure_file(${manifest_in} ${manifest_stage} @ONLY)
  file(GENERATE OUTPUT ${out_dir}/${NAME}.toml INPUT ${manifest_stage})

  if(ARG_NO_INSTALL OR MSTAR_PLUGIN_NO_INSTALL)
    return()
  endif()
  install(TARGETS ${NAME} LIBRARY DESTINATION lib/mstar/plugins/${NAME})
  install(FILES ${out_dir}/${NAME}.toml DESTINATION lib/mstar/plugins/${NAME})
endfunction()
