#include "registry/challenge.hpp"

#include <algorithm>
#include <cctype>

namespace capsa::registry {

namespace {

// RFC 7230 tchar.
bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}
  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  void skip_spaces() {
    while (!done() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  void skip_commas_and_spaces() {
    while (!done() && (text_[pos_] == ',' || text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  std::string token() {
    size_t start = pos_;
    while (!done() && is_token_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  void advance() { ++pos_; }
  std::string bare_value() {
    size_t start = pos_;
    while (!done() && text_[pos_] != ',' && text_[pos_] != ' ' && text_[pos_] != '\t') ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  std::string quoted() {  // at the opening quote
    std::string value;
    ++pos_;
    while (!done() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      value += text_[pos_++];
    }
    if (!done()) ++pos_;  // closing quote
    return value;
  }
  size_t position() const { return pos_; }
  void rewind(size_t pos) { pos_ = pos; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

// Reads "name = value" at the cursor; returns false (cursor unmoved) when what follows is
// not a parameter, i.e. the next challenge's scheme.
bool read_param(Cursor& cursor, Challenge& challenge) {
  const size_t start = cursor.position();
  std::string name = cursor.token();
  cursor.skip_spaces();
  if (name.empty() || cursor.peek() != '=') {
    cursor.rewind(start);
    return false;
  }
  cursor.advance();  // the '='
  cursor.skip_spaces();
  // Unquoted values should be tokens, but registries send bare URLs (realm=https://…):
  // take everything up to the next comma or space.
  std::string value = cursor.peek() == '"' ? cursor.quoted() : cursor.bare_value();
  challenge.params[lower(name)] = value;
  return true;
}

}  // namespace

std::string Challenge::param(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string() : it->second;
}

std::vector<Challenge> parse_challenges(std::string_view header) {
  std::vector<Challenge> challenges;
  Cursor cursor(header);
  while (true) {
    cursor.skip_commas_and_spaces();
    if (cursor.done()) break;
    std::string scheme = cursor.token();
    if (scheme.empty()) break;  // garbage: keep what was understood
    Challenge challenge{lower(scheme), {}};
    cursor.skip_spaces();
    // Parameters until the next scheme (a token not followed by '='). Token68 credentials
    // (Negotiate) are not used by registries and read as parameters without value.
    while (!cursor.done()) {
      cursor.skip_commas_and_spaces();
      if (!read_param(cursor, challenge)) break;
    }
    challenges.push_back(std::move(challenge));
  }
  return challenges;
}

std::optional<Challenge> find_challenge(const std::vector<std::string>& headers, std::string_view scheme) {
  const std::string wanted = lower(std::string(scheme));
  for (const auto& header : headers)
    for (auto& challenge : parse_challenges(header))
      if (challenge.scheme == wanted) return challenge;
  return std::nullopt;
}

}  // namespace capsa::registry
