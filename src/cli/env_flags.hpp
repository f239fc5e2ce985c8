#pragma once
// Apptainer's rule for flags that environment variables can set: APPTAINER_<KEY>, else
// SINGULARITY_<KEY>; a flag on the command line wins over both.
#include <optional>
#include <string>
#include <vector>

namespace capsa::cli {

std::optional<std::string> env_value(const std::string& key);
// "1", "true", "yes", "on" (any case) are true; anything else set is false.
bool env_flag(const std::string& key);

// The items of a comma list as Apptainer reads --network and --dns: blanks removed,
// empty items dropped ("a, b," -> {"a", "b"}).
std::vector<std::string> split_list(const std::string& list);

}  // namespace capsa::cli
