#include "cli/execution_control.hpp"

#include "ecl/enforce.hpp"
#include "ecl/location.hpp"
#include "signing/keyring.hpp"

namespace capsa::cli {

std::optional<FileIdentity> check_execution_control(const std::string& image) {
  const std::string path = ecl::ecl_file_path();
  if (path.empty()) return std::nullopt;
  return ecl::enforce(ecl::read_ecl(path), image, signing::administrator_public_keyrings());
}

}  // namespace capsa::cli
