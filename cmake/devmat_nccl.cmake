# Finds NCCL for the optional multi-GPU component (devmat::dist, <devmat/dist.hpp>).
#
# Looked for, in order: -DDEVMAT_NCCL_DIR=<dir> (or $DEVMAT_NCCL_DIR) holding include/nccl.h and
# lib/libnccl.so*, the PyPI wheel nvidia-nccl-cu13 installed for python3 (site-packages/nvidia/nccl),
# then the system (/usr/include/nccl.h, libnccl.so.2 from libnccl-dev or NVIDIA's packages).
# Defines the imported target devmat_nccl and DEVMAT_NCCL_FOUND, DEVMAT_NCCL_LIBRARY_DIR.
set(DEVMAT_NCCL_FOUND OFF)
set(_devmat_nccl_hints)
foreach(dir IN ITEMS "${DEVMAT_NCCL_DIR}" "$ENV{DEVMAT_NCCL_DIR}")
  if(dir)
    list(APPEND _devmat_nccl_hints "${dir}")
  endif()
endforeach()
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  # nvidia is a namespace package: its __file__ is None, its __path__ names the folder.
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import nvidia.nccl as n; print(list(n.__path__)[0])"
                  OUTPUT_VARIABLE _devmat_nccl_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE _devmat_nccl_rc)
  if(_devmat_nccl_rc EQUAL 0 AND _devmat_nccl_wheel)
    list(APPEND _devmat_nccl_hints "${_devmat_nccl_wheel}")
  endif()
endif()
find_path(DEVMAT_NCCL_INCLUDE_DIR nccl.h HINTS ${_devmat_nccl_hints} PATH_SUFFIXES include
          PATHS /usr/include /usr/local/include ${CUDAToolkit_INCLUDE_DIRS})
# The wheel ships libnccl.so.2 only (no unversioned link): look for both names.
find_library(DEVMAT_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR HINTS ${_devmat_nccl_hints} PATH_SUFFIXES lib lib64
             PATHS /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib ${CUDAToolkit_LIBRARY_DIR})
if(DEVMAT_NCCL_INCLUDE_DIR AND DEVMAT_NCCL_LIBRARY)
  file(STRINGS "${DEVMAT_NCCL_INCLUDE_DIR}/nccl.h" _devmat_nccl_ver REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*" "\\1.\\2.\\3"
         DEVMAT_NCCL_VERSION "${_devmat_nccl_ver}")
  set(DEVMAT_NCCL_FOUND ON)
  get_filename_component(DEVMAT_NCCL_LIBRARY_DIR "${DEVMAT_NCCL_LIBRARY}" DIRECTORY)
  if(NOT TARGET devmat_nccl)
    add_library(devmat_nccl SHARED IMPORTED)
    set_target_properties(devmat_nccl PROPERTIES IMPORTED_LOCATION "${DEVMAT_NCCL_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${DEVMAT_NCCL_INCLUDE_DIR}")
  endif()
endif()
