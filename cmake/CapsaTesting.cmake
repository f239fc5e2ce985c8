# capsa_add_test_suite(NAME SOURCES... [ROOT_ONLY] [REGISTRY])
#   One GoogleTest binary, registered as NAME.root (as the invoking user) and NAME.user
#   (as the unprivileged test user; skipped with exit code 77 when that user is missing).
#   Every suite sees the fixture locations through the environment:
#     CAPSA_UPSTREAM_FIXTURES  tests/fixtures/upstream (upstream-made files, vendored, read-only)
#     CAPSA_TEST_FIXTURES    fixtures built by tests/fixtures/*.sh (cached by script hash)
#     CAPSA_BINARY           the capsa CLI under test
#     CAPSA_BUILD_DIR        this build folder (the relocated-install test installs from it)
#   REGISTRY: the suite needs the test registries (tests/test_registries/start.sh, started once by
#   the test_registries.start test, stopped by test_registries.stop) and also sees
#     CAPSA_TEST_REGISTRY        127.0.0.1:PORT  plain HTTP, no auth
#     CAPSA_TEST_REGISTRY_TOKEN  127.0.0.1:PORT  HTTPS + Bearer token auth
#     CAPSA_TEST_REGISTRY_AUTH   https://127.0.0.1:PORT/token  its token service
#     CAPSA_TEST_REGISTRY_BASIC  127.0.0.1:PORT  HTTPS + Basic auth
#     CAPSA_TEST_CA              the CA (PEM) that signed the HTTPS servers' certificate
#     CAPSA_TEST_REGISTRY_STATE  the state folder (env, env.json with the API key and the
#                                Basic password, which exist only once the servers run)
#     CAPSA_TEST_REGISTRY_TOOLS  tests/test_registries (umoci-unpack.sh, tree-manifest.py)
set(CAPSA_UPSTREAM_FIXTURE_DIR "${CMAKE_SOURCE_DIR}/tests/fixtures/upstream" CACHE PATH "Upstream-made fixtures vendored in the repository")
# /var/tmp survives reboots and, unlike root's home, is readable by the unprivileged test user.
set(CAPSA_TEST_FIXTURE_DIR "/var/tmp/capsa-test-fixtures" CACHE PATH "Where generated test fixtures are cached")

# `cmake --install` writes its manifest into the build folder; the unprivileged test user
# installs from this root-owned build too (tests/cli/relocated_install_test.cpp).
file(TOUCH "${CMAKE_BINARY_DIR}/install_manifest.txt")
file(CHMOD "${CMAKE_BINARY_DIR}/install_manifest.txt" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ GROUP_WRITE WORLD_READ WORLD_WRITE)

# The registries listen on fixed ports on 127.0.0.1; two checkouts testing at once need
# different ports.
set(CAPSA_TEST_REGISTRY_PLAIN_PORT 5100 CACHE STRING "Port of the plain-HTTP test registry")
set(CAPSA_TEST_REGISTRY_TOKEN_PORT 5101 CACHE STRING "Port of the TLS + token-auth test registry")
set(CAPSA_TEST_REGISTRY_AUTH_PORT 5102 CACHE STRING "Port of the test registry's token service")
set(CAPSA_TEST_REGISTRY_BASIC_PORT 5103 CACHE STRING "Port of the TLS + Basic-auth test registry")
# Under the build tree, which the unprivileged test user can read.
set(CAPSA_TEST_REGISTRY_STATE_DIR "${CMAKE_BINARY_DIR}/test-registry" CACHE PATH
    "State of the test registries: configs, certificates, storage, logs")
set(_capsa_registry_ports
  "CAPSA_TEST_REGISTRY_PLAIN_PORT=${CAPSA_TEST_REGISTRY_PLAIN_PORT}"
  "CAPSA_TEST_REGISTRY_TOKEN_PORT=${CAPSA_TEST_REGISTRY_TOKEN_PORT}"
  "CAPSA_TEST_REGISTRY_AUTH_PORT=${CAPSA_TEST_REGISTRY_AUTH_PORT}"
  "CAPSA_TEST_REGISTRY_BASIC_PORT=${CAPSA_TEST_REGISTRY_BASIC_PORT}")
add_test(NAME test_registries.start
         COMMAND "${CMAKE_SOURCE_DIR}/tests/test_registries/start.sh" "${CAPSA_TEST_REGISTRY_STATE_DIR}"
                 "${CAPSA_TEST_FIXTURE_DIR}")
set_tests_properties(test_registries.start PROPERTIES FIXTURES_SETUP capsa_registry FIXTURES_REQUIRED capsa_fixtures
                     ENVIRONMENT "${_capsa_registry_ports}" TIMEOUT 1200)
add_test(NAME test_registries.stop
         COMMAND "${CMAKE_SOURCE_DIR}/tests/test_registries/stop.sh" "${CAPSA_TEST_REGISTRY_STATE_DIR}")
set_tests_properties(test_registries.stop PROPERTIES FIXTURES_CLEANUP capsa_registry)

# A private Slurm cluster (tests/slurm/start.sh: munge, slurmctld, logical nodes n1, n2),
# on ports 6900..6919 unless told otherwise; two checkouts testing at once need different
# ones. Started by slurm.start for the suites declared SLURM, stopped by slurm.stop after.
set(CAPSA_TEST_SLURM_PORT 6900 CACHE STRING "First of the 20 ports of the test Slurm cluster (slurmctld, slurmd, srun)")
set(CAPSA_TEST_SLURM_NODES 2 CACHE STRING "Logical nodes of the test Slurm cluster (1-4)")
set(CAPSA_TEST_SLURM_STATE_DIR "${CMAKE_BINARY_DIR}/test-slurm" CACHE PATH
    "State of the test Slurm cluster: slurm.conf, munge key and socket, spool, logs")
add_test(NAME slurm.start
         COMMAND "${CMAKE_SOURCE_DIR}/tests/slurm/start.sh" "${CAPSA_TEST_SLURM_STATE_DIR}" "${CAPSA_TEST_SLURM_NODES}")
set(_capsa_slurm_env "CAPSA_TEST_SLURM_PORT=${CAPSA_TEST_SLURM_PORT}")
# capsa's SPANK plugin (src/spank), when it is built, goes into the cluster's plugstack.conf.
if(TARGET capsa_spank)
  list(APPEND _capsa_slurm_env "CAPSA_TEST_SPANK_PLUGIN=$<TARGET_FILE:capsa_spank>"
       "CAPSA_TEST_SPANK_CAPSA=$<TARGET_FILE:capsa>" "CAPSA_TEST_SPANK_HELPER=$<TARGET_FILE:capsa-spank-task>")
endif()
set_tests_properties(slurm.start PROPERTIES FIXTURES_SETUP capsa_slurm ENVIRONMENT "${_capsa_slurm_env}" TIMEOUT 120)
add_test(NAME slurm.stop COMMAND "${CMAKE_SOURCE_DIR}/tests/slurm/stop.sh" "${CAPSA_TEST_SLURM_STATE_DIR}")
set_tests_properties(slurm.stop PROPERTIES FIXTURES_CLEANUP capsa_slurm)

# A private Grid Engine cell (tests/gridengine/start.sh: sge_qmaster and sge_execd of
# Debian's gridengine packages, queue capsa.q, parallel environment mpi) on ports 6640 and
# 6641 unless told otherwise. Started by gridengine.start for the suites declared
# GRIDENGINE, stopped by gridengine.stop after.
set(CAPSA_TEST_SGE_PORT 6640 CACHE STRING "qmaster port of the test Grid Engine cell (the execd takes the next)")
set(CAPSA_TEST_SGE_STATE_DIR "${CMAKE_BINARY_DIR}/test-gridengine" CACHE PATH
    "State of the test Grid Engine cell: SGE_ROOT, spool, the env file clients source")
add_test(NAME gridengine.start COMMAND "${CMAKE_SOURCE_DIR}/tests/gridengine/start.sh" "${CAPSA_TEST_SGE_STATE_DIR}")
set_tests_properties(gridengine.start PROPERTIES FIXTURES_SETUP capsa_gridengine
                     ENVIRONMENT "CAPSA_TEST_SGE_PORT=${CAPSA_TEST_SGE_PORT}" TIMEOUT 120)
add_test(NAME gridengine.stop COMMAND "${CMAKE_SOURCE_DIR}/tests/gridengine/stop.sh" "${CAPSA_TEST_SGE_STATE_DIR}")
set_tests_properties(gridengine.stop PROPERTIES FIXTURES_CLEANUP capsa_gridengine)

# The signing suite's OCSP responders (`openssl ocsp`, started by the tests themselves) take
# ports from this one to the ninth after it; two checkouts testing at once need different ones.
set(CAPSA_TEST_OCSP_PORT 5210 CACHE STRING "First of the 10 ports of the signing suite's test OCSP responders")
# The keyserver suite's SKS listens on 127.0.0.1 at this port when run as root and at the
# next one as the test user; two checkouts testing at once need different ones.
set(CAPSA_TEST_KEYSERVER_PORT 11380 CACHE STRING "Port of the test keyserver (SKS) of tests/keyserver (and the next)")

# The kernels the OLD_KERNEL suites also run as (tests/support/old_kernel.cpp): 4.18 in
# CI; -DCAPSA_TEST_OLD_KERNELS="4.18;5.14" adds RHEL 9's, and "" none. The longer
# OLD_KERNEL_EXTRA suites (build, pull, %post and --fakeroot runs) join them with
# -DCAPSA_TEST_OLD_KERNEL_EVERY_SUITE=ON, kept out of CI for its time.
set(CAPSA_TEST_OLD_KERNELS "4.18" CACHE STRING "Kernels the OLD_KERNEL suites also run as (4.18, 5.14)")
option(CAPSA_TEST_OLD_KERNEL_EVERY_SUITE "Run the OLD_KERNEL_EXTRA suites as on old kernels too" OFF)

# capsa_add_test_suite(NAME SOURCES... [ROOT_ONLY] [REGISTRY] [SLURM] [GRIDENGINE] [OLD_KERNEL|OLD_KERNEL_EXTRA])
#   OLD_KERNEL: the suite also runs as on each kernel of CAPSA_TEST_OLD_KERNELS, as
#   NAME.kernel-VERSION.root and .user (label old-kernel); OLD_KERNEL_EXTRA: likewise
#   when CAPSA_TEST_OLD_KERNEL_EVERY_SUITE is on.
#   SLURM: the suite needs the test Slurm cluster and sees SLURM_CONF (its configuration),
#   CAPSA_TEST_SLURM_STATE and CAPSA_TEST_SLURM_NODES.
#   GRIDENGINE: the suite needs the test Grid Engine cell and sees CAPSA_TEST_SGE_ENV (the
#   file to source before qsub: SGE_ROOT, SGE_CELL and the ports).
function(capsa_add_test_suite name)
  cmake_parse_arguments(ARG "ROOT_ONLY;REGISTRY;SLURM;GRIDENGINE;OLD_KERNEL;OLD_KERNEL_EXTRA" "" "" ${ARGN})
  add_executable(${name}_tests ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name}_tests PRIVATE capsa_test_support GTest::gtest_main)
  set(env
    "CAPSA_UPSTREAM_FIXTURES=${CAPSA_UPSTREAM_FIXTURE_DIR}"
    "CAPSA_TEST_FIXTURES=${CAPSA_TEST_FIXTURE_DIR}"
    "CAPSA_BINARY=$<TARGET_FILE:capsa>"
    "CAPSA_BUILD_DIR=${CMAKE_BINARY_DIR}"
    "CAPSA_TEST_OCSP_PORT=${CAPSA_TEST_OCSP_PORT}"
    # Each container's mounts go with it, as the suites' leak checks expect right after a
    # run: kept images (runtime/kept_image.hpp) are tested by their own suite.
    "CAPSA_KEEP_IMAGE_SECONDS=0")
  set(fixtures capsa_fixtures)
  if(ARG_REGISTRY)
    list(APPEND fixtures capsa_registry)
    list(APPEND env
      "CAPSA_TEST_REGISTRY=127.0.0.1:${CAPSA_TEST_REGISTRY_PLAIN_PORT}"
      "CAPSA_TEST_REGISTRY_TOKEN=127.0.0.1:${CAPSA_TEST_REGISTRY_TOKEN_PORT}"
      "CAPSA_TEST_REGISTRY_AUTH=https://127.0.0.1:${CAPSA_TEST_REGISTRY_AUTH_PORT}/token"
      "CAPSA_TEST_REGISTRY_BASIC=127.0.0.1:${CAPSA_TEST_REGISTRY_BASIC_PORT}"
      "CAPSA_TEST_CA=${CAPSA_TEST_REGISTRY_STATE_DIR}/ca.pem"
      "CAPSA_TEST_REGISTRY_STATE=${CAPSA_TEST_REGISTRY_STATE_DIR}"
      "CAPSA_TEST_REGISTRY_TOOLS=${CMAKE_SOURCE_DIR}/tests/test_registries")
  endif()
  if(ARG_SLURM)
    list(APPEND fixtures capsa_slurm)
    list(APPEND env
      "SLURM_CONF=${CAPSA_TEST_SLURM_STATE_DIR}/slurm.conf"
      "CAPSA_TEST_SLURM_STATE=${CAPSA_TEST_SLURM_STATE_DIR}"
      "CAPSA_TEST_SLURM_NODES=${CAPSA_TEST_SLURM_NODES}")
  endif()
  if(ARG_GRIDENGINE)
    list(APPEND fixtures capsa_gridengine)
    list(APPEND env "CAPSA_TEST_SGE_ENV=${CAPSA_TEST_SGE_STATE_DIR}/env")
  endif()
  add_test(NAME ${name}.root COMMAND $<TARGET_FILE:${name}_tests>)
  set_tests_properties(${name}.root PROPERTIES ENVIRONMENT "${env}" FIXTURES_REQUIRED "${fixtures}")
  if(NOT ARG_ROOT_ONLY)
    add_test(NAME ${name}.user
             COMMAND "${CMAKE_SOURCE_DIR}/tests/support/as-test-user" $<TARGET_FILE:${name}_tests>)
    set_tests_properties(${name}.user PROPERTIES ENVIRONMENT "${env}" FIXTURES_REQUIRED "${fixtures}"
                         SKIP_RETURN_CODE 77)
  endif()
  if(ARG_OLD_KERNEL OR (ARG_OLD_KERNEL_EXTRA AND CAPSA_TEST_OLD_KERNEL_EVERY_SUITE))
    foreach(kernel IN LISTS CAPSA_TEST_OLD_KERNELS)
      add_test(NAME ${name}.kernel-${kernel}.root
               COMMAND $<TARGET_FILE:capsa-old-kernel> ${kernel} $<TARGET_FILE:${name}_tests>)
      set_tests_properties(${name}.kernel-${kernel}.root PROPERTIES ENVIRONMENT "${env}"
                           FIXTURES_REQUIRED "${fixtures}" LABELS old-kernel)
      if(NOT ARG_ROOT_ONLY)
        add_test(NAME ${name}.kernel-${kernel}.user
                 COMMAND $<TARGET_FILE:capsa-old-kernel> ${kernel} "${CMAKE_SOURCE_DIR}/tests/support/as-test-user"
                         $<TARGET_FILE:${name}_tests>)
        set_tests_properties(${name}.kernel-${kernel}.user PROPERTIES ENVIRONMENT "${env}"
                             FIXTURES_REQUIRED "${fixtures}" SKIP_RETURN_CODE 77 LABELS old-kernel)
      endif()
    endforeach()
  endif()
endfunction()
