#include "runtime/capabilities.hpp"

#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "util/error.hpp"

namespace capsa::runtime {
namespace {

using CapState = std::unique_ptr<std::remove_pointer_t<cap_t>, int (*)(void*)>;

std::vector<int> all_capabilities() {
  std::vector<int> all;
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap)
    if (CAP_IS_SUPPORTED(cap)) all.push_back(cap);
  return all;
}

bool contains(const std::vector<int>& set, int cap) { return std::find(set.begin(), set.end(), cap) != set.end(); }

}  // namespace

std::vector<int> capability_numbers(const std::vector<std::string>& names) {
  std::vector<int> out;
  for (const std::string& name : names) {
    std::string lower;
    for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "all") return all_capabilities();
    if (lower.rfind("cap_", 0) != 0) lower.insert(0, "cap_");
    cap_value_t value = 0;
    if (cap_from_name(lower.c_str(), &value) != 0)
      throw Error("unknown capability \"" + name + "\" (names as in capabilities(7), e.g. CAP_NET_RAW)");
    out.push_back(value);
  }
  return out;
}

void check_capabilities(const CapabilityRequest& request, bool privileged) {
  capability_numbers(request.add);
  capability_numbers(request.drop);
  if (privileged) return;
  // --add-caps for anyone else: granted in the container's user namespace, as Apptainer
  // grants them without its setuid starter (capability.json is enforced only with it).
  if (request.keep_privs) throw Error("--keep-privs is root's: other users have no privileges to keep");
}

void apply_capabilities(const CapabilityRequest& request) {
  std::vector<int> keep;
  if (!request.no_privs) keep = all_capabilities();
  for (int cap : capability_numbers(request.add))
    if (!contains(keep, cap)) keep.push_back(cap);
  for (int cap : capability_numbers(request.drop)) std::erase(keep, cap);

  // Ambient first (it must stay within permitted and inheritable), then the bounding set,
  // which an exec of a root process copies into its permitted set.
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) throw_errno("clearing the ambient capabilities");
  for (int cap : all_capabilities())
    if (!contains(keep, cap) && cap_drop_bound(static_cast<cap_value_t>(cap)) != 0)
      throw_errno("dropping a capability from the bounding set");
  CapState state(cap_get_proc(), cap_free);
  if (!state) throw_errno("reading this process's capabilities");
  for (int cap : all_capabilities()) {
    if (contains(keep, cap)) continue;
    cap_value_t value = cap;
    cap_set_flag(state.get(), CAP_EFFECTIVE, 1, &value, CAP_CLEAR);
    cap_set_flag(state.get(), CAP_PERMITTED, 1, &value, CAP_CLEAR);
    cap_set_flag(state.get(), CAP_INHERITABLE, 1, &value, CAP_CLEAR);
  }
  // Not root inside: an exec keeps only ambient capabilities, so --add-caps raises them
  // there (they must be inheritable first). They act in the container's user namespace.
  const bool ambient = ::getuid() != 0 && !request.add.empty();
  if (ambient)
    for (int cap : capability_numbers(request.add)) {
      if (!contains(keep, cap)) continue;
      cap_value_t value = cap;
      cap_set_flag(state.get(), CAP_INHERITABLE, 1, &value, CAP_SET);
    }
  if (cap_set_proc(state.get()) != 0) throw_errno("setting this process's capabilities");
  if (ambient)
    for (int cap : capability_numbers(request.add))
      if (contains(keep, cap) && ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) != 0)
        throw_errno("granting capability " + std::to_string(cap) + " in the container's user namespace");
}

}  // namespace capsa::runtime
