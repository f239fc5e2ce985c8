// Binds the portable binaries (capsa-portable, capsa-full-portable) to glibc 2.28, RHEL 8's,
// the oldest clusters still run, although they are linked on Debian 12 (glibc 2.36).
//
// Why by hand: no older glibc (sysroot, cross toolchain, zig) is packaged in Debian 12, and
// a static glibc would load the host's NSS modules (sssd, LDAP users) into a mismatched libc.
// So the binaries link the host glibc dynamically, every other library statically, and each
// reference to a symbol whose default version is newer than 2.28 is redirected at link time
// (-Wl,--wrap=NAME, cmake/CapsaPortable.cmake, which lists exactly these names) to a
// __wrap_NAME here that calls the 2.28-era equivalent:
//   - the function itself at its older version, which newer glibc keeps as a compat symbol
//     (the pthread and dl functions moved into libc.so.6 in 2.34; at 2.28 they live in
//     libpthread.so.0 and libdl.so.2, which the binaries therefore also list as needed);
//   - the stat family, which before 2.33 was only __xstat & co. with a version argument;
//   - for what 2.28 lacks entirely (arc4random, mount_setattr, sigabbrev_np,
//     _dl_find_object), a small implementation.
// scripts/check-glibc-floor.sh checks the result with objdump -T.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

// Declares compat_NAME bound to NAME@VERSION and defines __wrap_NAME calling it.
#define CAPSA_FORWARD(ret, name, version, params, args) \
  ret compat_##name params;                             \
  __asm__(".symver compat_" #name "," #name "@" version); \
  ret __wrap_##name params;                             \
  ret __wrap_##name params { return compat_##name args; }

// ---- Program start-up --------------------------------------------------------------------
// glibc 2.34's crt1.o passes no init function and leaves the executable's constructors to
// the new __libc_start_main; 2.28's runs only the init function it is given. So the wrapper
// passes one that runs them, as 2.28's crt1.o did: newer glibc sees an init function and
// takes its "legacy program" path, which then also leaves the constructors to it.
typedef int (*capsa_main_fn)(int, char**, char**);
typedef void (*capsa_init_fn)(int, char**, char**);
extern capsa_init_fn __preinit_array_start[] __attribute__((visibility("hidden")));
extern capsa_init_fn __preinit_array_end[] __attribute__((visibility("hidden")));
extern capsa_init_fn __init_array_start[] __attribute__((visibility("hidden")));
extern capsa_init_fn __init_array_end[] __attribute__((visibility("hidden")));
void _init(void);

static void capsa_run_constructors(int argc, char** argv, char** envp) {
  for (capsa_init_fn* fn = __preinit_array_start; fn < __preinit_array_end; ++fn) (*fn)(argc, argv, envp);
  _init();
  for (capsa_init_fn* fn = __init_array_start; fn < __init_array_end; ++fn) (*fn)(argc, argv, envp);
}

int compat___libc_start_main(capsa_main_fn main_fn, int argc, char** argv, capsa_init_fn init, void (*fini)(void),
                             void (*rtld_fini)(void), void* stack_end);
__asm__(".symver compat___libc_start_main,__libc_start_main@GLIBC_2.2.5");
int __wrap___libc_start_main(capsa_main_fn main_fn, int argc, char** argv, capsa_init_fn init, void (*fini)(void),
                             void (*rtld_fini)(void), void* stack_end);
int __wrap___libc_start_main(capsa_main_fn main_fn, int argc, char** argv, capsa_init_fn init, void (*fini)(void),
                             void (*rtld_fini)(void), void* stack_end) {
  (void)init;
  (void)fini;  // the executable's destructors run from its DT_FINI_ARRAY (ld.so), in both
  return compat___libc_start_main(main_fn, argc, argv, capsa_run_constructors, NULL, rtld_fini, stack_end);
}

// ---- Threads (libpthread.so.0 at 2.28) -----------------------------------------------------
CAPSA_FORWARD(int, pthread_create, "GLIBC_2.2.5",
              (pthread_t * thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg),
              (thread, attr, start, arg))
CAPSA_FORWARD(int, pthread_join, "GLIBC_2.2.5", (pthread_t thread, void** result), (thread, result))
CAPSA_FORWARD(int, pthread_detach, "GLIBC_2.2.5", (pthread_t thread), (thread))
CAPSA_FORWARD(int, pthread_cancel, "GLIBC_2.2.5", (pthread_t thread), (thread))
CAPSA_FORWARD(int, pthread_kill, "GLIBC_2.2.5", (pthread_t thread, int sig), (thread, sig))
CAPSA_FORWARD(int, pthread_sigmask, "GLIBC_2.2.5", (int how, const sigset_t* set, sigset_t* old), (how, set, old))
CAPSA_FORWARD(int, pthread_attr_setstacksize, "GLIBC_2.2.5", (pthread_attr_t * attr, size_t size), (attr, size))
CAPSA_FORWARD(int, pthread_once, "GLIBC_2.2.5", (pthread_once_t * once, void (*fn)(void)), (once, fn))
CAPSA_FORWARD(int, pthread_key_create, "GLIBC_2.2.5", (pthread_key_t * key, void (*destroy)(void*)), (key, destroy))
CAPSA_FORWARD(int, __pthread_key_create, "GLIBC_2.2.5", (pthread_key_t * key, void (*destroy)(void*)),
              (key, destroy))
CAPSA_FORWARD(int, pthread_key_delete, "GLIBC_2.2.5", (pthread_key_t key), (key))
CAPSA_FORWARD(void*, pthread_getspecific, "GLIBC_2.2.5", (pthread_key_t key), (key))
CAPSA_FORWARD(int, pthread_setspecific, "GLIBC_2.2.5", (pthread_key_t key, const void* value), (key, value))
CAPSA_FORWARD(int, pthread_rwlock_rdlock, "GLIBC_2.2.5", (pthread_rwlock_t * lock), (lock))
CAPSA_FORWARD(int, pthread_rwlock_wrlock, "GLIBC_2.2.5", (pthread_rwlock_t * lock), (lock))
CAPSA_FORWARD(int, pthread_rwlock_unlock, "GLIBC_2.2.5", (pthread_rwlock_t * lock), (lock))
CAPSA_FORWARD(int, pthread_rwlock_init, "GLIBC_2.2.5", (pthread_rwlock_t * lock, const pthread_rwlockattr_t* attr),
              (lock, attr))
CAPSA_FORWARD(int, pthread_rwlock_destroy, "GLIBC_2.2.5", (pthread_rwlock_t * lock), (lock))
CAPSA_FORWARD(int, pthread_mutex_trylock, "GLIBC_2.2.5", (pthread_mutex_t * mutex), (mutex))
CAPSA_FORWARD(int, sem_init, "GLIBC_2.2.5", (sem_t * sem, int shared, unsigned value), (sem, shared, value))
CAPSA_FORWARD(int, sem_destroy, "GLIBC_2.2.5", (sem_t * sem), (sem))
CAPSA_FORWARD(int, sem_post, "GLIBC_2.2.5", (sem_t * sem), (sem))
CAPSA_FORWARD(int, sem_wait, "GLIBC_2.2.5", (sem_t * sem), (sem))

// libstdc++ (linked statically) skips atomic reference counts while this says the process
// is single-threaded; 2.28 has no such variable, and "maybe not" (0) is always correct.
char __wrap___libc_single_threaded = 0;

// ---- Dynamic loading (libdl.so.2 at 2.28) --------------------------------------------------
CAPSA_FORWARD(void*, dlopen, "GLIBC_2.2.5", (const char* file, int mode), (file, mode))
CAPSA_FORWARD(void*, dlsym, "GLIBC_2.2.5", (void* handle, const char* name), (handle, name))
CAPSA_FORWARD(int, dlclose, "GLIBC_2.2.5", (void* handle), (handle))
CAPSA_FORWARD(char*, dlerror, "GLIBC_2.2.5", (void), ())
CAPSA_FORWARD(int, dladdr, "GLIBC_2.2.5", (const void* address, Dl_info* info), (address, info))

// ---- The stat family: before 2.33 only the versioned __xstat entry points ------------------
// _STAT_VER and _MKNOD_VER of x86_64, which the newer headers no longer define.
enum { kCapsaStatVer = 1, kCapsaMknodVer = 0 };
int compat___xstat(int ver, const char* path, struct stat* buf);
int compat___lxstat(int ver, const char* path, struct stat* buf);
int compat___fxstat(int ver, int fd, struct stat* buf);
int compat___fxstatat(int ver, int dirfd, const char* path, struct stat* buf, int flags);
int compat___xmknodat(int ver, int dirfd, const char* path, mode_t mode, dev_t* dev);
__asm__(".symver compat___xstat,__xstat@GLIBC_2.2.5");
__asm__(".symver compat___lxstat,__lxstat@GLIBC_2.2.5");
__asm__(".symver compat___fxstat,__fxstat@GLIBC_2.2.5");
__asm__(".symver compat___fxstatat,__fxstatat@GLIBC_2.4");
__asm__(".symver compat___xmknodat,__xmknodat@GLIBC_2.4");
int __wrap_stat(const char* path, struct stat* buf);
int __wrap_stat64(const char* path, struct stat* buf);
int __wrap_lstat(const char* path, struct stat* buf);
int __wrap_lstat64(const char* path, struct stat* buf);
int __wrap_fstat(int fd, struct stat* buf);
int __wrap_fstat64(int fd, struct stat* buf);
int __wrap_fstatat(int dirfd, const char* path, struct stat* buf, int flags);
int __wrap_mknodat(int dirfd, const char* path, mode_t mode, dev_t dev);
// On x86_64 struct stat and struct stat64 are the same, so the 64 names share the entry.
int __wrap_stat(const char* path, struct stat* buf) { return compat___xstat(kCapsaStatVer, path, buf); }
int __wrap_stat64(const char* path, struct stat* buf) { return compat___xstat(kCapsaStatVer, path, buf); }
int __wrap_lstat(const char* path, struct stat* buf) { return compat___lxstat(kCapsaStatVer, path, buf); }
int __wrap_lstat64(const char* path, struct stat* buf) { return compat___lxstat(kCapsaStatVer, path, buf); }
int __wrap_fstat(int fd, struct stat* buf) { return compat___fxstat(kCapsaStatVer, fd, buf); }
int __wrap_fstat64(int fd, struct stat* buf) { return compat___fxstat(kCapsaStatVer, fd, buf); }
int __wrap_fstatat(int dirfd, const char* path, struct stat* buf, int flags) {
  return compat___fxstatat(kCapsaStatVer, dirfd, path, buf, flags);
}
int __wrap_mknodat(int dirfd, const char* path, mode_t mode, dev_t dev) {
  return compat___xmknodat(kCapsaMknodVer, dirfd, path, mode, &dev);
}

// ---- What 2.28 does not have ---------------------------------------------------------------
// mount_setattr(2) (glibc 2.36 added only the wrapper): the system call itself; capsa
// already falls back when the kernel answers ENOSYS.
int __wrap_mount_setattr(int dirfd, const char* path, unsigned flags, void* attr, size_t size);
int __wrap_mount_setattr(int dirfd, const char* path, unsigned flags, void* attr, size_t size) {
  return (int)syscall(SYS_mount_setattr, dirfd, path, flags, attr, size);
}

// closefrom (2.34): close_range(2) where the kernel has it (5.9), else each descriptor
// /proc/self/fd lists, else every number up to the limit; as glibc, it cannot fail.
void __wrap_closefrom(int lowfd);
void __wrap_closefrom(int lowfd) {
  if (lowfd < 0) lowfd = 0;
  if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0U) == 0) return;
  int dir_fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    // Raw getdents64, not opendir: closing while reading needs no allocation this way.
    char buffer[4096];
    long n;
    int closed_any = 1;
    while (closed_any) {  // closing changes the listing: read again until a pass closes none
      closed_any = 0;
      lseek(dir_fd, 0, SEEK_SET);
      while ((n = syscall(SYS_getdents64, dir_fd, buffer, sizeof buffer)) > 0) {
        for (long at = 0; at < n;) {
          struct {
            uint64_t ino;
            int64_t off;
            unsigned short reclen;
            unsigned char type;
            char name[];
          }* entry = (void*)(buffer + at);
          at += entry->reclen;
          char* end = NULL;
          long fd = strtol(entry->name, &end, 10);
          if (end == entry->name || *end != '\0' || fd < lowfd || fd == dir_fd) continue;
          close((int)fd);
          closed_any = 1;
        }
      }
    }
    close(dir_fd);
    return;
  }
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = lowfd; fd < (max > 0 ? max : 1024); ++fd) close((int)fd);
}

// arc4random (2.36): the kernel's random bytes through getrandom (2.25).
uint32_t __wrap_arc4random(void);
uint32_t __wrap_arc4random(void) {
  uint32_t value = 0;
  size_t got = 0;
  while (got < sizeof value) {
    ssize_t n = getrandom((char*)&value + got, sizeof value - got, 0);
    if (n > 0) got += (size_t)n;
    // EINTR retries; anything else means no entropy source at all, where glibc aborts too.
    else if (errno != EINTR) abort();
  }
  return value;
}

// sigabbrev_np (2.32): the signal's name without "SIG", as glibc gives it, from the x86_64
// Linux numbering; NULL for a number that has none (as glibc).
const char* __wrap_sigabbrev_np(int sig);
const char* __wrap_sigabbrev_np(int sig) {
  static const char* const names[] = {
      NULL,   "HUP",  "INT",  "QUIT", "ILL",  "TRAP", "ABRT", "BUS",    "FPE",  "KILL",  "USR1",
      "SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP", "TSTP", "TTIN",
      "TTOU", "URG",  "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO",   "PWR",  "SYS"};
  if (sig <= 0 || (size_t)sig >= sizeof names / sizeof names[0]) return NULL;
  return names[sig];
}

// _dl_find_object (2.35), which GCC 12's unwinder (libgcc_eh, linked statically) calls to find
// the exception tables of the object holding a code address. The same answer from
// dl_iterate_phdr, which the unwinder itself used before: the loaded object whose PT_LOAD
// segment holds the address, and its PT_GNU_EH_FRAME segment.
struct capsa_find_request {
  uintptr_t address;
  struct dl_find_object* result;
  int found;
};

static int capsa_find_in_object(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct capsa_find_request* request = data;
  uintptr_t start = UINTPTR_MAX;
  uintptr_t end = 0;
  int holds = 0;
  void* eh_frame = NULL;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* phdr = &info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + phdr->p_vaddr;
    if (phdr->p_type == PT_LOAD) {
      if (begin < start) start = begin;
      if (begin + phdr->p_memsz > end) end = begin + phdr->p_memsz;
      if (request->address >= begin && request->address < begin + phdr->p_memsz) holds = 1;
    } else if (phdr->p_type == PT_GNU_EH_FRAME) {
      eh_frame = (void*)begin;
    }
  }
  if (!holds) return 0;
  *request->result = (struct dl_find_object){0};
  request->result->dlfo_map_start = (void*)start;
  request->result->dlfo_map_end = (void*)end;
  request->result->dlfo_eh_frame = eh_frame;
  request->found = 1;
  return 1;
}

int __wrap__dl_find_object(void* address, struct dl_find_object* result);
int __wrap__dl_find_object(void* address, struct dl_find_object* result) {
  struct capsa_find_request request = {(uintptr_t)address, result, 0};
  dl_iterate_phdr(capsa_find_in_object, &request);
  return request.found ? 0 : -1;
}
