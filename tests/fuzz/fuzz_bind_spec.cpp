// Fuzzes the bind specifications a user or a job script hands capsa: -B lists, --mount
// and APPTAINER_BIND/SINGULARITY_BINDPATH. Any text must either be refused with
// capsa::Error or give binds with absolute destinations, and a parsed -B list written
// back in the -B syntax (APPTAINER_BIND for nested runs) must parse to the same binds.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/bind_spec.hpp"
#include "util/error.hpp"

namespace {

void check_destinations(const std::vector<capsa::runtime::BindSpec>& binds) {
  for (const auto& bind : binds)
    if (bind.destination.empty() || bind.destination[0] != '/' || bind.source.empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace runtime = capsa::runtime;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    auto binds = runtime::parse_bind_list(text);
    check_destinations(binds);
    if (runtime::parse_bind_list(runtime::format_bind_list(binds)) != binds) std::abort();
  } catch (const capsa::Error&) {
  }
  try {
    runtime::BindSpec bind = runtime::parse_mount(text);
    check_destinations({bind});
  } catch (const capsa::Error&) {
  }
  try {
    check_destinations(runtime::binds_from_environment({{"APPTAINER_BINDPATH", std::string(text)},
                                                        {"SINGULARITY_BIND", std::string(text)}}));
  } catch (const capsa::Error&) {
  }
  return 0;
}
