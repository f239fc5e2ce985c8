# capsa_add_domain_folders(EXCEPT name...)
#   add_subdirectory() for every subfolder of the current source folder that has a
#   CMakeLists.txt: src/ and tests/ grow a domain by adding a folder, no list to edit.
function(capsa_add_domain_folders)
  cmake_parse_arguments(ARG "" "" "EXCEPT" ${ARGN})
  file(GLOB lists LIST_DIRECTORIES false CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/*/CMakeLists.txt")
  foreach(list_file IN LISTS lists)
    get_filename_component(dir "${list_file}" DIRECTORY)
    get_filename_component(name "${dir}" NAME)
    if(NOT name IN_LIST ARG_EXCEPT)
      add_subdirectory(${name})
    endif()
  endforeach()
endfunction()
