# Every dependency is a Debian package installed by scripts/install-deps.sh.
find_package(PkgConfig REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
# Debian names the module libsquashfs1; upstream builds name it libsquashfs.
pkg_search_module(SQUASHFS REQUIRED IMPORTED_TARGET libsquashfs1 libsquashfs)
# seccomp filters for emulated fakeroot builds (runtime/seccomp_fakeroot.cpp)
pkg_check_modules(SECCOMP REQUIRED IMPORTED_TARGET libseccomp)
if(NOT CAPSA_FUZZ)
  find_package(CLI11 2.1 REQUIRED)
endif()
find_package(LibArchive 3.6 REQUIRED)
find_package(CURL 7.88 REQUIRED)
find_package(Threads REQUIRED)
