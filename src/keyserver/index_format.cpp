#include "keyserver/index_format.hpp"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <sstream>

#include "util/error.hpp"
#include "util/tab_columns.hpp"

namespace capsa::keyserver {
namespace {

std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ':')) fields.push_back(field);
  if (!line.empty() && line.back() == ':') fields.emplace_back();
  return fields;
}

std::string field(const std::vector<std::string>& fields, std::size_t i) { return i < fields.size() ? fields[i] : ""; }

// The user ID is percent-escaped (draft §5.2); some servers send it plain.
std::string unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) != 0 &&
        std::isxdigit(static_cast<unsigned char>(text[i + 2])) != 0) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string algorithm_name(const std::string& code) {
  if (code.empty() || code.find_first_not_of("0123456789") != std::string::npos) return "unknown";
  switch (std::stoi(code)) {
    case 1:
    case 2:
    case 3:
      return "RSA";
    case 16:
      return "Elgamal";
    case 17:
      return "DSA";
    case 18:
      return "Elliptic Curve";
    case 19:
      return "ECDSA";
    case 20:
      return "Reserved";
    case 21:
      return "Diffie-Hellman";
    default:
      return "unknown";
  }
}

// As Go prints a time.Time: "2006-01-02 15:04:05 -0700 MST", in local time.
std::string date(const std::string& seconds) {
  if (seconds.empty() || seconds.find_first_not_of("0123456789") != std::string::npos) return seconds;
  const std::time_t t = static_cast<std::time_t>(std::stoll(seconds));
  std::tm local{};
  ::localtime_r(&t, &local);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S %z %Z", &local);
  return text;
}

}  // namespace

KeyIndex parse_index(const std::string& text) {
  KeyIndex index;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    const auto fields = fields_of(line);
    const std::string& tag = fields.front();
    if (tag == "info") {
      const std::string count = field(fields, 2);
      if (count.empty() || count.find_first_not_of("0123456789") != std::string::npos)
        throw FormatError("the keyserver's index has a malformed info line: " + line);
      index.count = std::stoi(count);
    } else if (tag == "pub") {
      if (field(fields, 1).empty()) throw FormatError("the keyserver's index has a pub line without a key: " + line);
      index.keys.push_back({field(fields, 1),
                            field(fields, 2),
                            field(fields, 3),
                            field(fields, 4),
                            field(fields, 5),
                            field(fields, 6),
                            {}});
    } else if (tag == "uid") {
      if (index.keys.empty()) throw FormatError("the keyserver's index has a uid line before any pub line");
      index.keys.back().user_ids.push_back(unescape(field(fields, 1)));
    } else if (line.find(':') == std::string::npos) {
      throw FormatError("the keyserver's answer is not a machine-readable index (options=mr)");
    }
    // Other tags (draft §5.2 lets servers add them) are skipped.
  }
  if (index.count && *index.count > 0 && static_cast<std::size_t>(*index.count) != index.keys.size())
    throw FormatError("the keyserver's index announces " + std::to_string(*index.count) + " keys but lists " +
                      std::to_string(index.keys.size()));
  return index;
}

std::string format_index(const KeyIndex& index, bool long_list) {
  TabColumns columns;
  const std::size_t blank_cells = long_list ? 6 : 2;
  if (long_list)
    columns.add({"FINGERPRINT", "ALGORITHM", "BITS", "CREATION DATE", "EXPIRATION DATE", "STATUS"}, "NAME/EMAIL");
  else
    columns.add({"KEY ID", "BITS"}, "NAME/EMAIL");
  bool first = true;
  for (const auto& key : index.keys) {
    if (!first) columns.add({}, "");  // a blank line between keys
    first = false;
    std::vector<std::string> cells;
    if (long_list) {
      std::string status = "[enabled]";
      if (key.flags.find('r') != std::string::npos)
        status = "[revoked]";
      else if (key.flags.find('d') != std::string::npos)
        status = "[disabled]";
      else if (key.flags.find('e') != std::string::npos)
        status = "[expired]";
      cells = {key.key_id, algorithm_name(key.algorithm), key.bits, date(key.created), date(key.expires), status};
    } else {
      cells = {key.key_id.size() > 8 ? key.key_id.substr(key.key_id.size() - 8) : key.key_id, key.bits};
    }
    if (key.user_ids.empty()) columns.add(cells, "");
    for (std::size_t i = 0; i < key.user_ids.size(); ++i)
      columns.add(i == 0 ? cells : std::vector<std::string>(blank_cells), key.user_ids[i]);
  }
  return "Showing " + std::to_string(index.keys.size()) + " results\n\n" + columns.str();
}

}  // namespace capsa::keyserver
