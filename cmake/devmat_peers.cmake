# The peers that tests and benchmarks compare devmat with; neither is needed to build or use
# devmat.
#
# devmat_find_opencv(): the target devmat_opencv (OpenCV's core and imgproc, the oracle of the
# image tests) when they are found, from ${DEVMAT_OPENCV_DIR} (default: .carry/opencv when that
# folder exists, made by scripts/pack-opencv-carry for a machine that has no OpenCV C++
# library) or from the system (Debian: libopencv-core-dev libopencv-imgproc-dev). A carried
# copy is linked with an RPATH (not RUNPATH) to its folder, so that the libraries it brings
# (libtbb, lapack, ...) are found at run time without LD_LIBRARY_PATH.
#
# devmat_find_npp(): the target devmat_npp (NVIDIA NPP's image libraries, benchmarks only):
# CUDAToolkit's CUDA::npp* where the toolkit has them (the H200), else ${DEVMAT_NPP_DIR} (an
# unpacked nvidia-npp wheel, scripts/fetch-npp), so that the NPP rows compile anywhere.

function(devmat_find_opencv)
  if(TARGET devmat_opencv)
    return()
  endif()
  if(NOT DEFINED DEVMAT_OPENCV_DIR AND EXISTS ${PROJECT_SOURCE_DIR}/.carry/opencv/include)
    set(DEVMAT_OPENCV_DIR ${PROJECT_SOURCE_DIR}/.carry/opencv CACHE PATH "folder from scripts/pack-opencv-carry")
  endif()
  if(DEVMAT_OPENCV_DIR)
    set(hints HINTS ${DEVMAT_OPENCV_DIR}/include ${DEVMAT_OPENCV_DIR}/include/opencv4 NO_DEFAULT_PATH)
    set(lib_hints HINTS ${DEVMAT_OPENCV_DIR}/lib NO_DEFAULT_PATH)
  else()
    set(hints PATH_SUFFIXES opencv4)
    set(lib_hints)
  endif()
  find_path(DEVMAT_OPENCV_INCLUDE_DIR opencv2/imgproc.hpp ${hints})
  find_library(DEVMAT_OPENCV_CORE NAMES opencv_core libopencv_core.so.406 ${lib_hints})
  find_library(DEVMAT_OPENCV_IMGPROC NAMES opencv_imgproc libopencv_imgproc.so.406 ${lib_hints})
  if(NOT DEVMAT_OPENCV_INCLUDE_DIR OR NOT DEVMAT_OPENCV_CORE OR NOT DEVMAT_OPENCV_IMGPROC)
    message(STATUS "devmat: OpenCV (core, imgproc) not found, so the image tests' OpenCV cases are "
                   "reported as skipped. To have them: sudo apt-get install libopencv-core-dev "
                   "libopencv-imgproc-dev, or -DDEVMAT_OPENCV_DIR=<scripts/pack-opencv-carry's folder>")
    return()
  endif()
  if(DEVMAT_OPENCV_DIR)
    # A carried copy was built on another system: make sure it links and loads here (the C and
    # C++ runtimes are this machine's), or the tests that use it would fail to start at all.
    get_filename_component(libdir ${DEVMAT_OPENCV_CORE} DIRECTORY)
    set(probe_dir ${CMAKE_BINARY_DIR}/opencv-probe)
    file(WRITE ${probe_dir}/probe.cpp
         "#include <opencv2/imgproc.hpp>\nint main() { cv::Mat a(3, 3, CV_8U, cv::Scalar(1)), b; "
         "cv::resize(a, b, cv::Size(2, 2)); return b.at<unsigned char>(0, 0) == 1 ? 0 : 1; }\n")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -I${DEVMAT_OPENCV_INCLUDE_DIR} probe.cpp -o probe
                            ${DEVMAT_OPENCV_IMGPROC} ${DEVMAT_OPENCV_CORE} -Wl,--disable-new-dtags
                            -Wl,-rpath,${libdir} -Wl,-rpath-link,${libdir}
                    WORKING_DIRECTORY ${probe_dir} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
    if(rc EQUAL 0)
      execute_process(COMMAND ${probe_dir}/probe RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
    endif()
    if(NOT rc EQUAL 0)
      message(WARNING "devmat: the OpenCV in ${DEVMAT_OPENCV_DIR} does not link or run here (${rc}): ${log}"
                      "The image tests' OpenCV cases are reported as skipped.")
      return()
    endif()
  endif()
  add_library(devmat_opencv INTERFACE IMPORTED GLOBAL)
  target_include_directories(devmat_opencv SYSTEM INTERFACE ${DEVMAT_OPENCV_INCLUDE_DIR})
  target_link_libraries(devmat_opencv INTERFACE ${DEVMAT_OPENCV_IMGPROC} ${DEVMAT_OPENCV_CORE})
  target_compile_definitions(devmat_opencv INTERFACE DEVMAT_TEST_HAVE_OPENCV=1)
  if(DEVMAT_OPENCV_DIR)
    get_filename_component(libdir ${DEVMAT_OPENCV_CORE} DIRECTORY)
    target_link_options(devmat_opencv INTERFACE "LINKER:--disable-new-dtags" "LINKER:-rpath,${libdir}"
                        "LINKER:-rpath-link,${libdir}")
  endif()
  message(STATUS "devmat: OpenCV oracle from ${DEVMAT_OPENCV_INCLUDE_DIR} (${DEVMAT_OPENCV_CORE})")
endfunction()

function(devmat_find_npp)
  if(TARGET devmat_npp)
    return()
  endif()
  set(parts nppig nppif nppicc nppist nppim nppial nppidei nppitc nppc)
  set(libs)
  set(have_toolkit ON)
  foreach(p IN LISTS parts)
    if(TARGET CUDA::${p})
      list(APPEND libs CUDA::${p})
    else()
      set(have_toolkit OFF)
    endif()
  endforeach()
  if(have_toolkit)
    add_library(devmat_npp INTERFACE IMPORTED GLOBAL)
    target_link_libraries(devmat_npp INTERFACE ${libs})
    message(STATUS "devmat: NPP from the CUDA toolkit (benchmark rows)")
    return()
  endif()
  if(NOT DEVMAT_NPP_DIR AND DEFINED ENV{DEVMAT_NPP_DIR})
    set(DEVMAT_NPP_DIR $ENV{DEVMAT_NPP_DIR})
  endif()
  if(NOT DEVMAT_NPP_DIR)
    message(STATUS "devmat: NPP not found (not in the CUDA toolkit, no DEVMAT_NPP_DIR): the "
                   "benchmarks are built without their NPP rows (scripts/fetch-npp fetches it)")
    return()
  endif()
  find_path(DEVMAT_NPP_INCLUDE_DIR npp.h HINTS ${DEVMAT_NPP_DIR}/include NO_DEFAULT_PATH)
  set(libs)
  foreach(p IN LISTS parts)
    find_library(DEVMAT_NPP_${p} NAMES ${p} lib${p}.so.13 lib${p}.so.12 HINTS ${DEVMAT_NPP_DIR}/lib NO_DEFAULT_PATH)
    if(NOT DEVMAT_NPP_${p})
      message(STATUS "devmat: ${p} missing in ${DEVMAT_NPP_DIR}/lib: benchmarks without NPP rows")
      return()
    endif()
    list(APPEND libs ${DEVMAT_NPP_${p}})
  endforeach()
  if(NOT DEVMAT_NPP_INCLUDE_DIR)
    message(STATUS "devmat: npp.h missing in ${DEVMAT_NPP_DIR}/include: benchmarks without NPP rows")
    return()
  endif()
  add_library(devmat_npp INTERFACE IMPORTED GLOBAL)
  target_include_directories(devmat_npp SYSTEM INTERFACE ${DEVMAT_NPP_INCLUDE_DIR})
  target_link_libraries(devmat_npp INTERFACE ${libs})
  message(STATUS "devmat: NPP from ${DEVMAT_NPP_DIR} (benchmark rows)")
endfunction()
