# capsa-portable and capsa-full-portable: capsa and capsa-full linked from the same objects
# for the release tarball and the packages, so that they run on any x86_64 Linux with
# glibc 2.28 or newer (RHEL 8 and later) with nothing else installed:
#   - every library but glibc is linked statically (Debian's archives; libcurl from
#     scripts/build-static-curl.sh, since Debian's needs Kerberos, which has no archive);
#   - glibc stays shared (NSS modules such as sssd must load into the host's own libc), and
#     each reference to a glibc symbol newer than 2.28 is wrapped (portable/glibc_floor.c);
#   - scripts/check-glibc-floor.sh proves the result (the portable.glibc_floor test).
# They exist when CAPSA_PORTABLE_CURL names that libcurl.a (scripts/build.sh passes it);
# linking them compiles nothing again.
set(CAPSA_PORTABLE_CURL "" CACHE FILEPATH
    "A static libcurl.a without LDAP/GSS-API (scripts/build-static-curl.sh); enables the portable targets")
if(NOT CAPSA_PORTABLE_CURL)
  return()
endif()
if(NOT EXISTS "${CAPSA_PORTABLE_CURL}")
  message(FATAL_ERROR "CAPSA_PORTABLE_CURL=${CAPSA_PORTABLE_CURL} does not exist (scripts/build-static-curl.sh)")
endif()

# In link order: each library before the ones it uses.
set(capsa_portable_archives
    "${CAPSA_PORTABLE_CURL}" archive gpgme assuan gpg-error squashfs fuse3 ext2fs e2p com_err uring yaml-cpp seccomp cap
    ssl crypto nettle deflate zstd lz4 lzma bz2 z)
set(capsa_portable_link)
foreach(lib IN LISTS capsa_portable_archives)
  if(IS_ABSOLUTE "${lib}")
    list(APPEND capsa_portable_link "${lib}")
    continue()
  endif()
  find_library(CAPSA_PORTABLE_ARCHIVE_${lib} NAMES lib${lib}.a)
  if(NOT CAPSA_PORTABLE_ARCHIVE_${lib})
    message(FATAL_ERROR "lib${lib}.a not found (scripts/install-deps.sh installs it)")
  endif()
  list(APPEND capsa_portable_link "${CAPSA_PORTABLE_ARCHIVE_${lib}}")
endforeach()

# The glibc symbols above 2.28 that the binaries reference, each wrapped in glibc_floor.c
# (found with scripts/check-glibc-floor.sh on a build without the wrappers). Only these: a
# wrapper nothing calls would still import its old-version symbol.
set(capsa_glibc_wrapped
    __libc_start_main __libc_single_threaded _dl_find_object
    pthread_create pthread_join pthread_detach pthread_cancel pthread_kill pthread_sigmask
    pthread_attr_setstacksize pthread_once pthread_key_create __pthread_key_create pthread_key_delete
    pthread_getspecific pthread_setspecific pthread_rwlock_rdlock pthread_rwlock_wrlock
    pthread_rwlock_unlock pthread_rwlock_init pthread_rwlock_destroy pthread_mutex_trylock
    sem_init sem_destroy sem_post sem_wait
    dlopen dlsym dlclose dlerror dladdr
    stat stat64 lstat lstat64 fstat fstat64 fstatat mknodat
    mount_setattr arc4random sigabbrev_np closefrom)
set(capsa_glibc_wrap_options)
foreach(symbol IN LISTS capsa_glibc_wrapped)
  list(APPEND capsa_glibc_wrap_options "LINKER:--wrap=${symbol}")
endforeach()

function(capsa_add_portable name)
  cmake_parse_arguments(ARG "" "" "OBJECTS" ${ARGN})
  add_executable(${name} "${PROJECT_SOURCE_DIR}/src/cli/portable/glibc_floor.c")
  # The archives come first, so every reference resolves to them and --as-needed drops the
  # shared copies that capsa_engine's imported targets bring; libpthread.so.0 and libdl.so.2
  # are needed because at glibc 2.28 the wrapped thread and dl functions live there.
  target_link_libraries(${name} PRIVATE ${ARG_OBJECTS} capsa_cli_common capsa_engine CLI11::CLI11
                                        ${capsa_portable_link}
                                        "-Wl,--no-as-needed" "-l:libpthread.so.0" "-l:libdl.so.2" "-Wl,--as-needed")
  target_link_options(${name} PRIVATE -Wl,--as-needed -static-libstdc++ -static-libgcc
                      ${capsa_glibc_wrap_options})
endfunction()

capsa_add_portable(capsa-portable OBJECTS capsa_runner_main)
capsa_add_portable(capsa-full-portable OBJECTS capsa_full_main)
