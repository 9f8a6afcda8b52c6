# Every external dependency is found here, once. A missing one fails with the Debian package
# that provides it (scripts/setup installs them all).
function(rm_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "ringmaster: ${what} not found. Install it with scripts/setup "
                        "(Debian package: ${package}).")
  endif()
endfunction()

find_package(Threads REQUIRED)
find_package(GTest QUIET)
rm_require(GTest_FOUND "GoogleTest" "libgtest-dev libgmock-dev")
if(RM_BUILD_BENCH)
  find_package(benchmark QUIET)
  rm_require(benchmark_FOUND "Google Benchmark" "libbenchmark-dev")
endif()
find_package(yaml-cpp QUIET)
rm_require(yaml-cpp_FOUND "yaml-cpp" "libyaml-cpp-dev")
find_package(nlohmann_json QUIET)
rm_require(nlohmann_json_FOUND "nlohmann-json" "nlohmann-json3-dev")
find_package(prometheus-cpp QUIET)
rm_require(prometheus-cpp_FOUND "prometheus-cpp" "prometheus-cpp-dev")
find_package(ZLIB QUIET)
rm_require(ZLIB_FOUND "zlib" "zlib1g-dev")
find_package(OpenSSL QUIET)
rm_require(OpenSSL_FOUND "OpenSSL" "libssl-dev")
find_package(LibLZMA QUIET)
rm_require(LIBLZMA_FOUND "liblzma (CRC-64 of checkpoints)" "liblzma-dev")
# RE2: the regular expressions of CEL's matches() and OpenAPI's pattern, as Kubernetes (Go's
# regexp, the same syntax) reads them.
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(RE2 QUIET IMPORTED_TARGET re2)
endif()
rm_require(RE2_FOUND "RE2" "libre2-dev")
find_package(CURL QUIET)
rm_require(CURL_FOUND "libcurl" "libcurl4-openssl-dev")

# OpenBLAS: link the library directly so the BLAS thread count can be set per rank.
find_path(RM_OPENBLAS_INCLUDE cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-openmp
          /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include)
find_library(RM_OPENBLAS_LIB NAMES openblas openblasp openblaso
             PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/x86_64-linux-gnu/openblas-pthread)
rm_require(RM_OPENBLAS_LIB "OpenBLAS" "libopenblas-dev")
add_library(rm_openblas INTERFACE)
target_include_directories(rm_openblas INTERFACE ${RM_OPENBLAS_INCLUDE})
target_link_libraries(rm_openblas INTERFACE ${RM_OPENBLAS_LIB})

# Gloo (Debian's 2022 snapshot ships a CMake package without an imported target on some builds).
find_path(RM_GLOO_INCLUDE gloo/allreduce_ring.h)
find_library(RM_GLOO_LIB gloo)
rm_require(RM_GLOO_LIB "Gloo" "libgloo-dev")
add_library(rm_gloo INTERFACE)
target_include_directories(rm_gloo INTERFACE ${RM_GLOO_INCLUDE})
target_link_libraries(rm_gloo INTERFACE ${RM_GLOO_LIB} Threads::Threads)

set(RM_HAVE_MPI OFF)
if(RM_WITH_MPI)
  find_package(MPI QUIET COMPONENTS CXX C)
  if(MPI_C_FOUND)
    set(RM_HAVE_MPI ON)
  else()
    message(WARNING "ringmaster: Open MPI not found (Debian: libopenmpi-dev openmpi-bin); "
                    "building without the MPI communicator")
  endif()
endif()

# CUDA: the GPU trainer (cuBLASLt, NCCL). Built for Hopper (H100/H200) unless the caller names
# other architectures; it compiles without a GPU, and its tests skip without one.
set(RM_HAVE_CUDA OFF)
if(RM_WITH_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  # Device code is C++17: CMake 3.25 has no C++20 flag for nvcc 13.
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  find_path(RM_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(RM_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  rm_require(RM_NCCL_LIB "NCCL" "libnccl-dev (or NCCL under /usr/local/cuda)")
  add_library(rm_nccl INTERFACE)
  target_include_directories(rm_nccl INTERFACE ${RM_NCCL_INCLUDE})
  target_link_libraries(rm_nccl INTERFACE ${RM_NCCL_LIB} CUDA::cudart)
  set(RM_HAVE_CUDA ON)
endif()
