# oneDNN (Debian libdnnl-dev, C API v2.x) for the `cpu` inference backend in src/nn/cpu.
# Optional: without it the library still builds, nn_backend_cpu_create() answers
# FFU_ERR_UNSUPPORTED and sessions run on `ref`.
#
# Debian builds libdnnl with the OpenMP runtime (DNNL_CPU_RUNTIME = OMP, NEEDED
# libgomp), so the backend sets the OpenMP thread count of the calling thread around
# each primitive call; that needs omp_get_max_threads / omp_set_num_threads from
# libgomp, linked explicitly because symbols of indirect dependencies are not visible
# to the linker.
#
# Defines for every target in this project: FFU_HAVE_DNNL=1 when found (C code tests it
# with `#if FFU_HAVE_DNNL`; undefined means 0). Sets the CMake variable FFU_HAVE_DNNL
# (0/1) for anyone who wants it in ffu_config.h.
option(FFU_DNNL "Build the oneDNN cpu backend when libdnnl is found" ON)
set(FFU_HAVE_DNNL 0)
if(FFU_DNNL)
  find_path(FFU_DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.h)
  find_library(FFU_DNNL_LIBRARY NAMES dnnl)
  find_library(FFU_GOMP_LIBRARY NAMES gomp libgomp.so.1
               HINTS /usr/lib/x86_64-linux-gnu ${CMAKE_C_IMPLICIT_LINK_DIRECTORIES})
  set(ffu_dnnl_major 0)
  if(FFU_DNNL_INCLUDE_DIR AND EXISTS ${FFU_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h)
    file(STRINGS ${FFU_DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h ffu_dnnl_major_line
         REGEX "#define DNNL_VERSION_MAJOR [0-9]+")
    string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" ffu_dnnl_major "${ffu_dnnl_major_line}")
  endif()
  # The backend is written against the v2 C API (op descriptors); v3 removed them.
  if(FFU_DNNL_INCLUDE_DIR AND FFU_DNNL_LIBRARY AND FFU_GOMP_LIBRARY
     AND ffu_dnnl_major EQUAL 2)
    set(FFU_HAVE_DNNL 1)
    list(APPEND FFU_LINK_LIBS ${FFU_DNNL_LIBRARY} ${FFU_GOMP_LIBRARY})
    string(APPEND FFU_PC_LIBS_PRIVATE " -ldnnl -lgomp")
    add_compile_definitions(FFU_HAVE_DNNL=1)
    if(NOT FFU_DNNL_INCLUDE_DIR STREQUAL "/usr/include")
      include_directories(${FFU_DNNL_INCLUDE_DIR})
    endif()
  endif()
endif()
message(STATUS "facefuse: oneDNN cpu backend ${FFU_HAVE_DNNL}")
