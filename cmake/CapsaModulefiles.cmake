# Environment modules for sites (`module load capsa`, or `module load singularity` where job
# scripts say so): an Lmod file (NAME/VERSION.lua) and a Tcl one (NAME/VERSION) side by
# side in <prefix>/share/modulefiles, which a site adds with `module use`. Lmod prefers
# the .lua file; Environment Modules reads only the Tcl one (it starts with #%Module).
# The files find the prefix from where they are, through paths relative to their folder.
set(capsa_module_dir "${CMAKE_INSTALL_DATADIR}/modulefiles")
set(capsa_module_full "${CMAKE_INSTALL_FULL_DATADIR}/modulefiles/capsa")
file(RELATIVE_PATH MODULE_TO_BINDIR "${capsa_module_full}" "${CMAKE_INSTALL_FULL_BINDIR}")
file(RELATIVE_PATH MODULE_TO_MANDIR "${capsa_module_full}" "${CMAKE_INSTALL_FULL_MANDIR}")
file(RELATIVE_PATH MODULE_TO_DATADIR "${capsa_module_full}" "${CMAKE_INSTALL_FULL_DATADIR}")
set(CAPSA_VERSION "${PROJECT_VERSION}")
set(capsa_module_build "${CMAKE_BINARY_DIR}/modulefiles")
configure_file("${PROJECT_SOURCE_DIR}/etc/modulefiles/capsa.lua.in" "${capsa_module_build}/${PROJECT_VERSION}.lua" @ONLY)
configure_file("${PROJECT_SOURCE_DIR}/etc/modulefiles/capsa.tcl.in" "${capsa_module_build}/${PROJECT_VERSION}" @ONLY)
# The same files under the names job scripts load; the runtime answers to those names too.
foreach(name capsa singularity apptainer)
  install(FILES "${capsa_module_build}/${PROJECT_VERSION}.lua" "${capsa_module_build}/${PROJECT_VERSION}"
          DESTINATION "${capsa_module_dir}/${name}")
endforeach()
