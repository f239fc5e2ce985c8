#pragma once
// The directives of Apptainer's apptainer.conf (pkg/util/apptainerconf/config.go, 1.4)
// and the few SingularityCE adds to singularity.conf, so that a site can copy either file
// to PREFIX/etc/capsa/capsa.conf. Each has the kind of value it takes and its default;
// docs/administration.md says what each means for capsa.
#include <string>
#include <string_view>
#include <vector>

namespace capsa::config {

enum class ValueKind {
  boolean,  // yes | no
  choice,   // one of `choices`
  number,   // an unsigned integer
  list,     // comma lists; repeated lines add to it (bind path, limit container paths...)
  text,     // any one value
  size,     // a memory size: 500M, 1G, or bytes
};

struct Directive {
  std::string_view name;  // "mount home"
  ValueKind kind;
  std::string_view choices;        // "yes,no,minimal" for a choice; "" otherwise
  std::string_view default_value;  // "" when it has none (lists: comma-separated)
};

// Every directive capsa knows, in apptainer.conf's order.
const std::vector<Directive>& all_directives();

// The directive named `name` (exactly, as Apptainer matches), or nullptr.
const Directive* find_directive(std::string_view name);

// Whether `value` is one the directive takes (yes/no, one of its choices, a number);
// lists and text take anything.
bool valid_value(const Directive& directive, const std::string& value);

// "yes or no", "one of yes, no, minimal", "a whole number": for error messages.
std::string expected_values(const Directive& directive);

// "1G", "500M", "2048K" or "1073741824" in bytes (mksquashfs mem); throws FormatError.
unsigned long long memory_size_bytes(const std::string& text);

}  // namespace capsa::config
