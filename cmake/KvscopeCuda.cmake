# KVSCOPE_CUDA=AUTO|ON|OFF decides whether the CUDA kernels are built.
# AUTO builds them when nvcc is found. The CUDA runtime is linked statically,
# so the same binary runs on machines with no GPU or no driver: device
# detection happens at run time (engine/core/device.cpp).
set(KVSCOPE_CUDA AUTO CACHE STRING "Build the CUDA kernels: AUTO, ON or OFF")
set_property(CACHE KVSCOPE_CUDA PROPERTY STRINGS AUTO ON OFF)

set(KVSCOPE_HAVE_CUDA OFF)
if(NOT KVSCOPE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # "native" fails at configure time on a machine without a GPU; 90 = H100/H200.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17) # CMake 3.25 cannot pass C++20 to nvcc
    set(KVSCOPE_HAVE_CUDA ON)
  elseif(KVSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "KVSCOPE_CUDA=ON but no CUDA compiler was found (set CUDACXX or CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "kvscope: CUDA kernels ${KVSCOPE_HAVE_CUDA}")
