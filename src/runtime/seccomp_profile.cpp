#include "runtime/seccomp_profile.hpp"

#include <seccomp.h>
#include <sys/prctl.h>

#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::runtime {

struct SeccompProfile::Filter {
  scmp_filter_ctx ctx = nullptr;
  ~Filter() {
    if (ctx != nullptr) seccomp_release(ctx);
  }
};

namespace {

using nlohmann::json;

struct ProfileError {
  std::string what;
};

std::uint32_t action_named(const std::string& name, int errno_ret) {
  static const std::map<std::string, std::uint32_t> fixed = {{"SCMP_ACT_ALLOW", SCMP_ACT_ALLOW},
                                                             {"SCMP_ACT_KILL", SCMP_ACT_KILL},
                                                             {"SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD},
                                                             {"SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS},
                                                             {"SCMP_ACT_LOG", SCMP_ACT_LOG}};
  if (auto found = fixed.find(name); found != fixed.end()) return found->second;
  if (name == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(static_cast<std::uint16_t>(errno_ret));
  if (name == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
  if (name == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(static_cast<std::uint16_t>(errno_ret));
  throw ProfileError{"unknown action \"" + name + "\""};
}

scmp_compare operator_named(const std::string& name) {
  static const std::map<std::string, scmp_compare> operators = {{"SCMP_CMP_NE", SCMP_CMP_NE},
                                                                {"SCMP_CMP_LT", SCMP_CMP_LT},
                                                                {"SCMP_CMP_LE", SCMP_CMP_LE},
                                                                {"SCMP_CMP_EQ", SCMP_CMP_EQ},
                                                                {"SCMP_CMP_GE", SCMP_CMP_GE},
                                                                {"SCMP_CMP_GT", SCMP_CMP_GT},
                                                                {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};
  auto found = operators.find(name);
  if (found == operators.end()) throw ProfileError{"unknown operator \"" + name + "\""};
  return found->second;
}

std::uint32_t architecture_named(const std::string& name) {
  // "SCMP_ARCH_X86_64" -> "x86_64", libseccomp's own name for it.
  std::string short_name = name.rfind("SCMP_ARCH_", 0) == 0 ? name.substr(10) : name;
  for (char& c : short_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::uint32_t token = seccomp_arch_resolve_name(short_name.c_str());
  if (token == 0) throw ProfileError{"unknown architecture \"" + name + "\""};
  return token;
}

void check(int rc, const std::string& what) {
  if (rc < 0) throw ProfileError{what + ": " + std::strerror(-rc)};
}

void add_rule(scmp_filter_ctx ctx, const json& rule, int default_errno) {
  const int errno_ret = rule.value("errnoRet", default_errno);
  const std::uint32_t action = action_named(rule.at("action").get<std::string>(), errno_ret);
  std::vector<scmp_arg_cmp> comparisons;
  for (const json& arg : rule.value("args", json::array())) {
    comparisons.push_back(SCMP_CMP(arg.at("index").get<unsigned>(), operator_named(arg.at("op").get<std::string>()),
                                   arg.at("value").get<std::uint64_t>(), arg.value("valueTwo", std::uint64_t{0})));
  }
  std::vector<std::string> names = rule.contains("names")
                                       ? rule.at("names").get<std::vector<std::string>>()
                                       : std::vector<std::string>{rule.at("name").get<std::string>()};
  for (const std::string& name : names) {
    int number = seccomp_syscall_resolve_name(name.c_str());
    if (number == __NR_SCMP_ERROR) continue;  // unknown to this libseccomp or architecture: skipped, as runc does
    int rc = seccomp_rule_add_array(ctx, action, number, static_cast<unsigned>(comparisons.size()),
                                    comparisons.empty() ? nullptr : comparisons.data());
    if (rc == -EACCES || rc == -EEXIST) continue;  // the default action already, or listed twice
    check(rc, "rule for " + name);
  }
}

}  // namespace

SeccompProfile SeccompProfile::load(const std::string& path) {
  const std::string where = "--security seccomp:" + path;
  json profile;
  try {
    profile = json::parse(read_whole_file(path));
  } catch (const json::exception& e) {
    throw Error(where + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  SeccompProfile out;
  out.filter_ = std::make_shared<Filter>();
  try {
    if (!profile.is_object()) throw ProfileError{"expected a JSON object"};
    const int default_errno = profile.value("defaultErrnoRet", EPERM);
    out.filter_->ctx = seccomp_init(action_named(profile.at("defaultAction").get<std::string>(), default_errno));
    if (out.filter_->ctx == nullptr) throw ProfileError{"libseccomp could not start a filter"};
    for (const json& arch : profile.value("architectures", json::array())) {
      int rc = seccomp_arch_add(out.filter_->ctx, architecture_named(arch.get<std::string>()));
      if (rc != -EEXIST) check(rc, "architecture " + arch.get<std::string>());
    }
    for (const json& rule : profile.value("syscalls", json::array())) add_rule(out.filter_->ctx, rule, default_errno);
  } catch (const ProfileError& e) {
    throw Error(where + ": " + e.what);
  } catch (const json::exception& e) {
    throw Error(where + ": " + std::string(e.what()));
  }
  return out;
}

void SeccompProfile::install() const {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw_errno("setting no_new_privs for the seccomp profile");
  if (int rc = seccomp_load(filter_->ctx); rc < 0) {
    errno = -rc;
    throw_errno("loading the seccomp profile");
  }
}

}  // namespace capsa::runtime
