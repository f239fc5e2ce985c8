# capsa_add_test_suite(NAME SOURCES... [ROOT_ONLY])
#   One GoogleTest binary, registered as NAME.root (as the invoking user) and NAME.user
#   (as the unprivileged test user; skipped with exit code 77 when that user is missing).
#   Every suite sees the fixture locations through the environment:
#     CAPSA_SHARED_FIXTURES  ../shared/fixtures (upstream-made files, read-only)
#     CAPSA_TEST_FIXTURES    fixtures built by tests/fixtures/*.sh (cached by script hash)
#     CAPSA_BINARY           the capsa CLI under test
set(CAPSA_SHARED_FIXTURE_DIR "${CMAKE_SOURCE_DIR}/../shared/fixtures" CACHE PATH "shared/fixtures beside the checkout")
# /var/tmp survives reboots and, unlike root's home, is readable by the unprivileged test user.
set(CAPSA_TEST_FIXTURE_DIR "/var/tmp/capsa-test-fixtures" CACHE PATH "Where generated test fixtures are cached")

function(capsa_add_test_suite name)
  cmake_parse_arguments(ARG "ROOT_ONLY" "" "" ${ARGN})
  add_executable(${name}_tests ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name}_tests PRIVATE capsa_test_support GTest::gtest_main)
  set(env
    "CAPSA_SHARED_FIXTURES=${CAPSA_SHARED_FIXTURE_DIR}"
    "CAPSA_TEST_FIXTURES=${CAPSA_TEST_FIXTURE_DIR}"
    "CAPSA_BINARY=$<TARGET_FILE:capsa>")
  add_test(NAME ${name}.root COMMAND $<TARGET_FILE:${name}_tests>)
  set_tests_properties(${name}.root PROPERTIES ENVIRONMENT "${env}" FIXTURES_REQUIRED capsa_fixtures)
  if(NOT ARG_ROOT_ONLY)
    add_test(NAME ${name}.user
             COMMAND "${CMAKE_SOURCE_DIR}/tests/support/as-test-user" $<TARGET_FILE:${name}_tests>)
    set_tests_properties(${name}.user PROPERTIES ENVIRONMENT "${env}" FIXTURES_REQUIRED capsa_fixtures
                         SKIP_RETURN_CODE 77)
  endif()
endfunction()
