# Records the version, the git commit and the enabled features in a generated header,
# so that `capsa version` can tell a bug report exactly what was built.
find_package(Git QUIET)
set(CAPSA_GIT_COMMIT "unknown")
if(GIT_FOUND AND EXISTS "${CMAKE_SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" rev-parse --short=12 HEAD
                  WORKING_DIRECTORY "${CMAKE_SOURCE_DIR}"
                  OUTPUT_VARIABLE CAPSA_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
                  ERROR_QUIET RESULT_VARIABLE _git_rc)
  if(NOT _git_rc EQUAL 0 OR CAPSA_GIT_COMMIT STREQUAL "")
    set(CAPSA_GIT_COMMIT "unknown")
  endif()
endif()
