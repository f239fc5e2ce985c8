#pragma once
// Apptainer's rule for flags that environment variables can set: APPTAINER_<KEY>, else
// SINGULARITY_<KEY>; a flag on the command line wins over both.
#include <optional>
#include <string>

namespace capsa::cli {

std::optional<std::string> env_value(const std::string& key);
// "1", "true", "yes", "on" (any case) are true; anything else set is false.
bool env_flag(const std::string& key);

}  // namespace capsa::cli
