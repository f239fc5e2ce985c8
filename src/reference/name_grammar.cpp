#include "reference/name_grammar.hpp"

#include "oci/quoted.hpp"

namespace capsa::reference::grammar {
namespace {

using oci::quote;

bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool is_alnum(char c) { return is_lower_alnum(c) || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Separators between alphanumeric runs: exactly ".", "_", "__", or one or more "-".
bool is_valid_separator(std::string_view s) {
  if (s == "." || s == "_" || s == "__") return true;
  return !s.empty() && s.find_first_not_of('-') == std::string_view::npos;
}

bool is_path_component(std::string_view c) {
  if (c.empty() || !is_lower_alnum(c.front()) || !is_lower_alnum(c.back())) return false;
  std::size_t i = 0;
  while (i < c.size()) {
    std::size_t run = i;
    while (run < c.size() && !is_lower_alnum(c[run])) ++run;
    if (run > i && !is_valid_separator(c.substr(i, run - i))) return false;
    while (run < c.size() && is_lower_alnum(c[run])) ++run;
    i = run;
  }
  return true;
}

bool is_domain_label(std::string_view l) {
  if (l.empty() || !is_alnum(l.front()) || !is_alnum(l.back())) return false;
  for (char c : l)
    if (!is_alnum(c) && c != '-') return false;
  return true;
}

bool is_host(std::string_view host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    auto inside = host.substr(1, host.size() - 2);
    return inside.find_first_not_of("0123456789abcdefABCDEF:") == std::string_view::npos;
  }
  for (std::size_t start = 0;;) {
    auto dot = host.find('.', start);
    if (!is_domain_label(host.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool is_port(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  unsigned value = 0;
  for (char c : port) {
    if (!is_digit(c)) return false;
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

}  // namespace

std::optional<std::string> registry_error(std::string_view registry) {
  // The port follows the last ':' outside the brackets of an IPv6 address.
  auto bracket = registry.rfind(']');
  auto colon = registry.rfind(':');
  std::string_view host = registry, port;
  bool has_port = colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
  if (has_port) {
    host = registry.substr(0, colon);
    port = registry.substr(colon + 1);
    if (!is_port(port)) return "registry port " + quote(port) + " is not a number from 1 to 65535";
  }
  if (!is_host(host)) return "registry " + quote(registry) + " is not a valid host[:port]";
  return std::nullopt;
}

std::optional<std::string> repository_error(std::string_view repository) {
  for (std::size_t start = 0;;) {
    auto slash = repository.find('/', start);
    auto component = repository.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (!is_path_component(component))
      return "repository " + quote(repository) +
             " must be lower-case letters and digits, with '.', '_', '__' or '-' only between them, in "
             "'/'-separated components";
    if (slash == std::string_view::npos) return std::nullopt;
    start = slash + 1;
  }
}

std::optional<std::string> tag_error(std::string_view tag) {
  bool ok = !tag.empty() && tag.size() <= 128 && (is_alnum(tag.front()) || tag.front() == '_');
  for (char c : tag) ok = ok && (is_alnum(c) || c == '_' || c == '.' || c == '-');
  if (ok) return std::nullopt;
  return "tag " + quote(tag) + " must be 1 to 128 letters, digits, '_', '.' or '-', not starting with '.' or '-'";
}

}  // namespace capsa::reference::grammar
