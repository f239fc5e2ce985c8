#pragma once
// A string as one POSIX shell word, for scripts capsa writes.
#include <string>

namespace capsa {

// Single-quoted: nothing is special but the quote itself ('it'\''s').
std::string single_quoted(const std::string& text);

}  // namespace capsa
