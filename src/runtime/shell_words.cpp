#include "runtime/shell_words.hpp"

#include <cstring>

namespace capsa::runtime {
namespace {

bool name_char(char c, bool first) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (!first && c >= '0' && c <= '9');
}

// After a $: what only a shell can give ($?, $$, $!, $#, $@, $*, $-, $0..$9, $(...)).
bool special_parameter(char c) { return std::strchr("?$!#@*-0123456789(", c) != nullptr; }

// Reads one word left to right. `stop` ends it (the `}` of an enclosing ${...}).
class WordReader {
 public:
  WordReader(const std::string& text, const VariableLookup& lookup, WordShape& shape)
      : text_(text), lookup_(lookup), shape_(shape) {}

  bool read(std::string* out, char stop) {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == stop) return true;
      if (c == '\'' && quoted_) return false;  // in "${X:-'w'}" shells disagree on what the quotes mean
      if (c == '\'') {
        std::size_t end = text_.find('\'', pos_ + 1);
        if (end == std::string::npos) return false;
        *out += text_.substr(pos_ + 1, end - pos_ - 1);
        pos_ = end + 1;
      } else if (c == '"') {
        ++pos_;
        if (!read_double_quoted(out)) return false;
      } else if (c == '\\') {
        if (pos_ + 1 >= text_.size()) return false;
        if (text_[pos_ + 1] != '\n') *out += text_[pos_ + 1];  // backslash-newline: a continued line
        pos_ += 2;
      } else if (c == '$') {
        if (!quoted_) shape_.unquoted_expansion = true;
        if (!read_parameter(out)) return false;
      } else if (c == '`' || c == '\n' || (c == '~' && !quoted_)) {
        return false;
      } else if (stop != '}' && std::strchr(" \t;&|()<>", c) != nullptr) {
        return false;  // inside ${X:-...} these are the word's own characters
      } else {
        if (!quoted_ && (c == '*' || c == '?' || c == '[')) shape_.unquoted_glob = true;
        *out += c;
        ++pos_;
      }
    }
    return stop == '\0';
  }

 private:
  bool read_double_quoted(std::string* out) {
    bool was_quoted = quoted_;
    quoted_ = true;
    bool closed = read_double_quoted_body(out);
    quoted_ = was_quoted;
    return closed;
  }

  bool read_double_quoted_body(std::string* out) {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c == '\\' && pos_ + 1 < text_.size()) {
        char next = text_[pos_ + 1];
        if (next == '\\' || next == '"' || next == '$' || next == '`') {
          *out += next;
        } else if (next != '\n') {
          *out += c;
          *out += next;
        }
        pos_ += 2;
      } else if (c == '$') {
        if (!read_parameter(out)) return false;
      } else if (c == '`') {
        return false;
      } else {
        *out += c;
        ++pos_;
      }
    }
    return false;
  }

  // $NAME, ${NAME}, ${NAME:-W}, ${NAME-W}, ${NAME:+W}, ${NAME+W} (W may be quoted, as in
  // `"${K:-"V"}"`).
  bool read_parameter(std::string* out) {
    ++pos_;  // the $
    if (pos_ >= text_.size()) {
      *out += '$';
      return true;
    }
    if (text_[pos_] != '{') {
      if (special_parameter(text_[pos_])) return false;
      std::size_t start = pos_;
      while (pos_ < text_.size() && name_char(text_[pos_], pos_ == start)) ++pos_;
      if (pos_ == start) {
        *out += '$';  // a lone $ stands for itself
        return true;
      }
      if (const std::string* value = lookup_(text_.substr(start, pos_ - start))) *out += *value;
      return true;
    }
    ++pos_;
    std::size_t start = pos_;
    while (pos_ < text_.size() && name_char(text_[pos_], pos_ == start)) ++pos_;
    if (pos_ == start || pos_ >= text_.size()) return false;
    const std::string* value = lookup_(text_.substr(start, pos_ - start));
    if (text_[pos_] == '}') {
      ++pos_;
      if (value) *out += *value;
      return true;
    }
    bool colon = text_[pos_] == ':';
    if (colon) ++pos_;
    if (pos_ >= text_.size() || (text_[pos_] != '-' && text_[pos_] != '+')) return false;
    bool use_word_when_set = text_[pos_] == '+';
    ++pos_;
    std::string word;
    if (!read(&word, '}')) return false;
    ++pos_;  // the }
    bool set = value != nullptr && (!colon || !value->empty());
    if (use_word_when_set) {
      if (set) *out += word;
    } else {
      *out += set ? *value : word;
    }
    return true;
  }

  const std::string& text_;
  const VariableLookup& lookup_;
  WordShape& shape_;
  std::size_t pos_ = 0;
  bool quoted_ = false;  // inside "...", where nothing is split or matched
};

}  // namespace

bool is_shell_variable_name(const std::string& name) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0)) return false;
  return true;
}

bool expand_word(const std::string& word, const VariableLookup& lookup, std::string* value, WordShape* shape) {
  WordShape seen;
  std::string out;
  WordReader reader(word, lookup, seen);
  if (!reader.read(&out, '\0')) return false;
  *value = std::move(out);
  if (shape) *shape = seen;
  return true;
}

bool expand_shell_word(const std::string& word, const EnvMap& env, std::string* value) {
  return expand_word(
      word,
      [&env](const std::string& name) -> const std::string* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : &it->second;
      },
      value);
}

}  // namespace capsa::runtime
