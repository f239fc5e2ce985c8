// The lean runner: with an execution control list in place, capsa-full (which can read
// it and check signatures) runs the command; without one nothing is checked, at the cost
// of one stat(2) per candidate path.
#include "cli/execution_control.hpp"
#include "cli/forward.hpp"
#include "ecl/location.hpp"

namespace capsa::cli {

std::optional<FileIdentity> check_execution_control(const std::string&) {
  if (!ecl::ecl_file_path().empty()) forward_to_full();
  return std::nullopt;
}

}  // namespace capsa::cli
