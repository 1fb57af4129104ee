# Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
# Finds the project's dependencies (Debian packages; see the README for why each is here) and
# decides MSTAR_WITH_CUDA / MSTAR_WITH_TORCH.

find_package(dlpack REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(Boost 1.74 REQUIRED)
find_package(Threads REQUIRED)

# CUDA: the runtime uses only the CUDA runtime API (no nvcc needed for it).
set(MSTAR_CUDA_ENABLED OFF)
set(MSTAR_CUDA_MAJOR 0)
if(NOT MSTAR_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(MSTAR_CUDA_ENABLED ON)
    set(MSTAR_CUDA_MAJOR ${CUDAToolkit_VERSION_MAJOR})
  elseif(MSTAR_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "MSTAR_WITH_CUDA=ON but the CUDA toolkit was not found")
  endif()
endif()

# LibTorch: only plugins (and the SDK's LibTorch helpers) use it; the runtime never links it.
set(MSTAR_TORCH_ENABLED OFF)
set(MSTAR_TORCH_VERSION "")
set(MSTAR_TORCH_CXX11_ABI 1)
if(NOT MSTAR_WITH_TORCH STREQUAL "OFF")
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(MSTAR_TORCH_ENABLED ON)
    set(MSTAR_TORCH_VERSION ${Torch_VERSION})
    if(TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
      set(MSTAR_TORCH_CXX11_ABI 0)
    endif()
  elseif(MSTAR_WITH_TORCH STREQUAL "ON")
    message(FATAL_ERROR "MSTAR_WITH_TORCH=ON but LibTorch was not found (set Torch_DIR)")
  endif()
endif()

message(STATUS "M*: CUDA ${MSTAR_CUDA_ENABLED} (major ${MSTAR_CUDA_MAJOR}), "
               "LibTorch ${MSTAR_TORCH_ENABLED} (${MSTAR_TORCH_VERSION})")
