#include "util/go_duration.hpp"

#include <cstdint>
#include <limits>

#include "util/error.hpp"

namespace capsa {
namespace {

// Nanoseconds in one UNIT, 0 for an unknown unit.
std::int64_t unit_size(const std::string& unit) {
  if (unit == "ns") return 1;
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1000;  // µs: micro sign or Greek mu
  if (unit == "ms") return 1000LL * 1000;
  if (unit == "s") return 1000LL * 1000 * 1000;
  if (unit == "m") return 60LL * 1000 * 1000 * 1000;
  if (unit == "h") return 3600LL * 1000 * 1000 * 1000;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// "1.500000000" -> "1.5"; "2.000" -> "2".
std::string trimmed(std::string number) {
  if (number.find('.') == std::string::npos) return number;
  while (number.back() == '0') number.pop_back();
  if (number.back() == '.') number.pop_back();
  return number;
}

// whole + fraction/scale as a decimal, `digits` places before trimming.
std::string decimal(std::int64_t value, std::int64_t scale, int digits) {
  std::string fraction = std::to_string(value % scale);
  fraction.insert(0, static_cast<std::size_t>(digits) - fraction.size(), '0');
  return trimmed(std::to_string(value / scale) + "." + fraction);
}

}  // namespace

std::chrono::nanoseconds parse_go_duration(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return Error(what + " " + text + ": not a duration (a number and a unit, e.g. 30s, 1m30s, 1.5h, 500ms)");
  };
  std::size_t at = 0;
  bool negative = false;
  if (at < text.size() && (text[at] == '-' || text[at] == '+')) negative = text[at++] == '-';
  if (text.substr(at) == "0") return std::chrono::nanoseconds(0);
  if (at == text.size()) throw bad();
  long double total = 0;
  while (at < text.size()) {
    const std::size_t start = at;
    while (at < text.size() && (is_digit(text[at]) || text[at] == '.')) ++at;
    const std::string number = text.substr(start, at - start);
    if (number.empty() || number == "." || number.find('.') != number.rfind('.')) throw bad();
    const std::size_t unit_start = at;
    while (at < text.size() && !is_digit(text[at]) && text[at] != '.') ++at;
    const std::int64_t size = unit_size(text.substr(unit_start, at - unit_start));
    if (size == 0) throw bad();
    total += std::stold(number) * static_cast<long double>(size);
    if (total > static_cast<long double>(std::numeric_limits<std::int64_t>::max())) throw bad();
  }
  const auto nanoseconds = static_cast<std::int64_t>(total);
  return std::chrono::nanoseconds(negative ? -nanoseconds : nanoseconds);
}

std::string format_go_duration(std::chrono::nanoseconds duration) {
  std::int64_t ns = duration.count();
  std::string sign = ns < 0 ? "-" : "";
  if (ns < 0) ns = -ns;
  if (ns == 0) return "0s";
  if (ns < 1000) return sign + std::to_string(ns) + "ns";
  if (ns < 1000LL * 1000) return sign + decimal(ns, 1000, 3) + "\xC2\xB5s";
  if (ns < 1000LL * 1000 * 1000) return sign + decimal(ns, 1000LL * 1000, 6) + "ms";
  const std::int64_t second = 1000LL * 1000 * 1000;
  std::string out = sign;
  if (ns >= 3600 * second) out += std::to_string(ns / (3600 * second)) + "h";
  if (ns >= 60 * second) out += std::to_string(ns / (60 * second) % 60) + "m";
  return out + decimal(ns % (60 * second), second, 9) + "s";
}

}  // namespace capsa
