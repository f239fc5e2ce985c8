// The lean runner has no registry code: a docker:// image is capsa-full's to pull and run.
#include "cli/commands.hpp"
#include "cli/forward.hpp"

namespace capsa::cli {

RemoteImage image_for_remote_reference(const std::string&, const RegistryFlags&, bool, bool, const std::string&) {
  forward_to_full();
}

}  // namespace capsa::cli
