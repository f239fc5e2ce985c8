#include "config/directives.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "util/error.hpp"

namespace capsa::config {
namespace {

using K = ValueKind;

bool in_list(std::string_view list, std::string_view item) {
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    if (list.substr(start, end - start) == item) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

const std::vector<Directive>& all_directives() {
  static const std::vector<Directive> directives = {
      {"allow setuid", K::boolean, "", "yes"},
      {"max loop devices", K::number, "", "256"},
      {"allow pid ns", K::boolean, "", "yes"},
      {"allow uts ns", K::boolean, "", "yes"},
      {"config passwd", K::boolean, "", "yes"},
      {"config group", K::boolean, "", "yes"},
      {"config resolv_conf", K::boolean, "", "yes"},
      {"mount proc", K::boolean, "", "yes"},
      {"mount sys", K::boolean, "", "yes"},
      {"mount dev", K::choice, "yes,no,minimal", "yes"},
      {"mount devpts", K::boolean, "", "yes"},
      {"mount home", K::boolean, "", "yes"},
      {"mount tmp", K::boolean, "", "yes"},
      {"mount hostfs", K::boolean, "", "no"},
      {"bind path", K::list, "", "/etc/localtime,/etc/hosts"},
      {"user bind control", K::boolean, "", "yes"},
      {"enable fusemount", K::boolean, "", "yes"},
      {"enable overlay", K::choice, "yes,no,try,driver", "yes"},
      {"enable underlay", K::choice, "yes,no,preferred", "yes"},
      {"mount slave", K::boolean, "", "yes"},
      {"sessiondir max size", K::number, "", "64"},
      {"keep image seconds", K::number, "", "3"},
      {"fuse for lone gzip images", K::boolean, "", "yes"},
      {"limit container owners", K::list, "", ""},
      {"limit container groups", K::list, "", ""},
      {"limit container paths", K::list, "", ""},
      {"allow container sif", K::boolean, "", "yes"},
      {"allow container encrypted", K::boolean, "", "yes"},
      {"allow container squashfs", K::boolean, "", "yes"},
      {"allow container extfs", K::boolean, "", "yes"},
      {"allow container dir", K::boolean, "", "yes"},
      {"allow setuid-mount encrypted", K::boolean, "", "yes"},
      {"allow setuid-mount squashfs", K::choice, "yes,no,iflimited", "iflimited"},
      {"allow setuid-mount extfs", K::boolean, "", "no"},
      {"allow net users", K::list, "", ""},
      {"allow net groups", K::list, "", ""},
      {"allow net networks", K::list, "", ""},
      {"always use nv", K::boolean, "", "no"},
      {"use nvidia-container-cli", K::boolean, "", "no"},
      {"always use rocm", K::boolean, "", "no"},
      {"root default capabilities", K::choice, "full,file,no", "full"},
      {"memory fs type", K::choice, "tmpfs,ramfs", "tmpfs"},
      {"cni configuration path", K::text, "", ""},
      {"cni plugin path", K::text, "", ""},
      {"binary path", K::text, "", "$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
      {"mksquashfs procs", K::number, "", "0"},
      {"mksquashfs mem", K::size, "", ""},
      {"shared loop devices", K::boolean, "", "no"},
      {"image driver", K::text, "", ""},
      {"download concurrency", K::number, "", "3"},
      {"download part size", K::number, "", "5242880"},
      {"download buffer size", K::number, "", "32768"},
      {"systemd cgroups", K::boolean, "", "yes"},
      // Apptainer's struct calls it "apptheus communication socket path", its template
      // writes "apptheus socket path": both are its own.
      {"apptheus socket path", K::text, "", "/run/apptheus/gateway.sock"},
      {"apptheus communication socket path", K::text, "", "/run/apptheus/gateway.sock"},
      {"allow monitoring", K::boolean, "", "no"},
      // SingularityCE's singularity.conf.
      {"allow kernel squashfs", K::boolean, "", "yes"},
      {"allow kernel extfs", K::boolean, "", "yes"},
      {"allow ipc ns", K::boolean, "", "yes"},
      {"allow user ns", K::boolean, "", "yes"},
      {"mksquashfs path", K::text, "", ""},
      {"cryptsetup path", K::text, "", ""},
      {"ldconfig path", K::text, "", ""},
      {"nvidia-container-cli path", K::text, "", ""},
      {"autofs bug path", K::list, "", ""},
      {"allow root capabilities", K::boolean, "", "yes"},
      {"sif fuse", K::boolean, "", "no"},
  };
  return directives;
}

const Directive* find_directive(std::string_view name) {
  const auto& all = all_directives();
  auto it = std::find_if(all.begin(), all.end(), [name](const Directive& d) { return d.name == name; });
  return it == all.end() ? nullptr : &*it;
}

bool valid_value(const Directive& directive, const std::string& value) {
  switch (directive.kind) {
    case K::boolean:
      return value == "yes" || value == "no";
    case K::choice:
      return in_list(directive.choices, value);
    case K::number:
      // Apptainer reads it with strconv.ParseUint(value, 0, 64): decimal here.
      return !value.empty() && value.size() <= 19 &&
             std::all_of(value.begin(), value.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    case K::size:
      try {
        memory_size_bytes(value);
        return true;
      } catch (const FormatError&) {
        return false;
      }
    case K::list:
    case K::text:
      return true;
  }
  return false;
}

std::string expected_values(const Directive& directive) {
  switch (directive.kind) {
    case K::boolean:
      return "yes or no";
    case K::choice: {
      std::string out = "one of ";
      for (char c : directive.choices) out += c == ',' ? std::string(", ") : std::string(1, c);
      return out;
    }
    case K::number:
      return "a whole number";
    case K::size:
      return "a size such as 500M or 1G";
    case K::list:
    case K::text:
      return "any value";
  }
  return "";
}

unsigned long long memory_size_bytes(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const bool digits = !text.empty() && std::isdigit(static_cast<unsigned char>(text[0])) != 0;
  unsigned long long n = digits ? std::strtoull(text.c_str(), &end, 10) : 0;
  if (!digits || errno != 0) throw FormatError("\"" + text + "\" is no size (write 500M or 1G)");
  const std::string unit(end);
  unsigned shift = 0;
  if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M" || unit == "m")
    shift = 20;
  else if (unit == "G" || unit == "g")
    shift = 30;
  else if (!unit.empty())
    throw FormatError("\"" + text + "\" is no size (write 500M or 1G)");
  if (shift != 0 && n > (~0ULL >> shift)) throw FormatError("\"" + text + "\" is too large");
  return n << shift;
}

}  // namespace capsa::config
