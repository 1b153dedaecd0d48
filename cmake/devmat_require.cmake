# devmat_require(<Package> [<find_package arguments>...]
#                DEBIAN <debian package> OPTION <option> FOR <what> [OPTIONAL])
#
# find_package(<Package> <arguments> QUIET), and when it is not found, one message that says
# what needs it, the Debian/Ubuntu package that provides it and the option that turns that part
# off, instead of CMake's generic "Could not find a package configuration file". Without
# OPTIONAL that stops the configure; with OPTIONAL it is a note and <Package>_FOUND stays false.
# A macro, so that <Package>_FOUND, <Package>_VERSION and the imported targets are seen by the
# caller.
macro(devmat_require devmat_req_package)
  cmake_parse_arguments(devmat_req "OPTIONAL" "DEBIAN;OPTION;FOR" "" ${ARGN})
  find_package(${devmat_req_package} ${devmat_req_UNPARSED_ARGUMENTS} QUIET)
  if(NOT ${devmat_req_package}_FOUND)
    devmat_missing(${devmat_req_package} "${devmat_req_DEBIAN}" "${devmat_req_OPTION}"
                   "${devmat_req_FOR}" ${devmat_req_OPTIONAL})
  endif()
endmacro()

# devmat_missing(<name> <debian package> <option> <what> <optional>): the message itself, also
# for dependencies found another way than find_package (stb's headers).
function(devmat_missing name debian option what optional)
  if(optional)
    message(STATUS "devmat: ${name} not found, so ${what} is left out. To have it: "
                   "sudo apt-get install ${debian} (Debian/Ubuntu). To silence this: -D${option}=OFF")
  else()
    message(FATAL_ERROR
      "devmat: ${name}, needed by ${what}, was not found.\n"
      "  Install it:        sudo apt-get install ${debian}    (Debian/Ubuntu)\n"
      "                     or point CMAKE_PREFIX_PATH at its installation\n"
      "  Or build without:  -D${option}=OFF\n")
  endif()
endfunction()
