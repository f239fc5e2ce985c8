#pragma once
// --security seccomp:PROFILE: an OCI runtime-spec seccomp profile (the JSON of
// config.json's linux.seccomp, also what Docker's and Apptainer's profiles are written
// in) compiled with libseccomp and loaded last before exec.
//   {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
//    "architectures": ["SCMP_ARCH_X86_64", ...],
//    "syscalls": [{"names": ["read", ...], "action": "SCMP_ACT_ALLOW",
//                  "errnoRet": 1, "args": [{"index": 0, "value": 1, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]}]}
#include <memory>
#include <string>

namespace capsa::runtime {

class SeccompProfile {
 public:
  // Parses and compiles the profile at `path`. Throws Error naming the file and what in it
  // is wrong (an unknown action, operator or architecture; a field of the wrong type).
  // System calls this libseccomp does not know are skipped, as runc does.
  static SeccompProfile load(const std::string& path);

  // Sets no_new_privs and installs the filter on the calling thread; the command's exec
  // keeps it. Throws SystemError when the kernel refuses it.
  void install() const;

 private:
  struct Filter;
  std::shared_ptr<Filter> filter_;
};

}  // namespace capsa::runtime
