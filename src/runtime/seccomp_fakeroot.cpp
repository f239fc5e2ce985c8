#include "runtime/seccomp_fakeroot.hpp"

#include <seccomp.h>
#include <sys/stat.h>

#include <cerrno>
#include <memory>
#include <string>

#include "util/error.hpp"

namespace capsa::runtime {
namespace {

struct ReleaseFilter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};

// Calls that change ownership or identity: faked, whatever their arguments. The 32-bit
// names cover i386 programs on x86_64 (libseccomp skips names an architecture lacks).
constexpr const char* kFakedCalls[] = {
    "chown",     "chown32",     "fchown",     "fchown32",   "lchown",      "lchown32",   "fchownat",
    "setuid",    "setuid32",    "setgid",     "setgid32",   "setreuid",    "setreuid32", "setregid",
    "setregid32", "setresuid",  "setresuid32", "setresgid", "setresgid32", "setgroups",  "setgroups32",
    "setfsuid",  "setfsuid32",  "setfsgid",   "setfsgid32", "capset",
};

void check(int rc, const std::string& what) {
  if (rc < 0) throw SystemError("seccomp filter for emulated fakeroot: " + what, -rc);
}

}  // namespace

void install_fakeroot_seccomp_filter() {
  std::unique_ptr<void, ReleaseFilter> ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) throw Error("seccomp filter for emulated fakeroot: seccomp_init failed");
#if defined(__x86_64__)
  // i386 binaries run through the same filter (EEXIST: already there).
  if (int rc = seccomp_arch_add(ctx.get(), SCMP_ARCH_X86); rc < 0 && rc != -EEXIST) check(rc, "adding x86");
#endif
  const auto success = SCMP_ACT_ERRNO(0);  // "fails" with error 0: the caller sees success
  for (const char* name : kFakedCalls) {
    int number = seccomp_syscall_resolve_name(name);
    if (number == __NR_SCMP_ERROR) continue;  // unknown to this libseccomp
    int rc = seccomp_rule_add(ctx.get(), success, number, 0);
    if (rc == -EDOM || rc == -EINVAL) continue;  // not a call of these architectures
    check(rc, std::string("rule for ") + name);
  }
  // Device nodes cannot be made in a user namespace; pretend, as for ownership (a
  // package shipping /dev entries installs; the node is simply absent). Fifos, sockets
  // and regular files made through mknod stay real.
  for (mode_t type : {S_IFCHR, S_IFBLK}) {
    check(seccomp_rule_add(ctx.get(), success, SCMP_SYS(mknod), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, S_IFMT, type)), "mknod");
    check(seccomp_rule_add(ctx.get(), success, SCMP_SYS(mknodat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, S_IFMT, type)),
          "mknodat");
  }
  check(seccomp_load(ctx.get()), "loading it");
}

}  // namespace capsa::runtime
