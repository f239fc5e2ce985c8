#pragma once
// `capsa config global`: Apptainer's `apptainer config global` (internal/app/apptainer/
// config_global_linux.go) on capsa.conf. --set adds values to a list directive (bind path,
// limit container ...) and replaces the value of any other; --unset removes matching
// values; --reset returns a directive to its default; --get prints its values joined by
// commas. Unlike Apptainer, which writes the whole file anew from its template, capsa
// changes only the lines of that directive, so a site's own comments survive.
#include <string>

#include "config/config_file.hpp"

namespace capsa::config {

enum class EditOp { set, unset, reset };

// The text of the configuration `text` (read from `path`, which messages name) with
// `directive` changed. `value` may be a comma list. Throws Error for an unknown
// directive, a value it does not take, a missing value, or an --unset value that is not
// set; the result is checked to parse.
std::string edit_config(const std::string& text, EditOp op, const std::string& directive, const std::string& value,
                        const std::string& path);

// --get: the directive's values joined by ","; "" when the file does not set it.
// Throws Error for an unknown directive.
std::string config_value(const ConfigFile& file, const std::string& directive);

// Replaces the file at `path` with `text` atomically (a temporary beside it, renamed
// over it), keeping its mode. A caller who may not change it gets one line saying so.
void write_config(const std::string& path, const std::string& text);

}  // namespace capsa::config
