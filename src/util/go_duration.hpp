#pragma once
// Durations written as Go writes them (time.ParseDuration, Duration.String): "90s",
// "1m30s", "1.5h", "500ms". Apptainer's --runscript-timeout takes one, and its message
// prints one back.
#include <chrono>
#include <string>

namespace capsa {

// Parses `text`: an optional sign, then one or more DECIMAL UNIT pairs with the units ns,
// us (or µs), ms, s, m, h; "0" alone is zero. Throws Error naming `what` and the text.
std::chrono::nanoseconds parse_go_duration(const std::string& text, const std::string& what);

// As Go prints it: "1m0s", "1s", "1.5s", "500ms", "0s".
std::string format_go_duration(std::chrono::nanoseconds duration);

}  // namespace capsa
