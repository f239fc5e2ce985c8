#include "runtime/env_script.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <vector>

#include "runtime/shell_words.hpp"

namespace capsa::runtime {
namespace {

// Variables a shell sets for itself: their values here would be guesses.
bool set_by_the_shell(const std::string& name) {
  static const std::set<std::string> names = {
      "PPID", "IFS", "PS2", "PS4", "OPTIND", "OPTARG", "HOSTNAME", "SHLVL", "RANDOM", "LINENO", "SECONDS", "EUID",
      "UID", "GROUPS", "HOSTTYPE", "OSTYPE", "MACHTYPE", "OLDPWD", "SHELLOPTS", "BASHOPTS", "PIPESTATUS", "FUNCNAME",
      "DIRSTACK", "COLUMNS", "LINES", "HISTFILE", "HISTSIZE", "HISTFILESIZE", "MAILCHECK", "ENV", "_"};
  return names.count(name) != 0 || name.rfind("BASH", 0) == 0;
}

struct Token {
  enum Kind { Word, Unknown, Newline, Semi, And, Or, End } kind;  // Unknown: the rest of a line not read (Lenient)
  std::string text;
  int line;
};

// Splits `text` into words and the few operators environment files use; the words keep
// their quotes (shell_words expands them). Anything else needs a shell.
class Tokenizer {
 public:
  Tokenizer(const std::string& text, const std::string& origin, bool lenient)
      : text_(text), origin_(origin), lenient_(lenient) {}

  std::vector<Token> tokens() {
    std::vector<Token> out;
    while (pos_ < text_.size()) {
      const std::size_t start = pos_;
      const int start_line = line_;
      try {
        next_token(out);
      } catch (const NeedsShell&) {
        if (!lenient_) throw;
        // The rest of the line is one token the parser will not run.
        pos_ = text_.find('\n', start);
        if (pos_ == std::string::npos) pos_ = text_.size();
        line_ = start_line;
        out.push_back({Token::Unknown, text_.substr(start, pos_ - start), start_line});
      }
    }
    out.push_back({Token::End, "", line_});
    return out;
  }

 private:
  void next_token(std::vector<Token>& out) {
    {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
        pos_ += 2;
        ++line_;
      } else if (c == '\n') {
        out.push_back({Token::Newline, "", line_++});
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ';') {
        if (next_is(';')) fail("`;;`");
        out.push_back({Token::Semi, ";", line_});
        ++pos_;
      } else if (c == '&') {
        if (!next_is('&')) fail("a background command (&)");
        out.push_back({Token::And, "&&", line_});
        pos_ += 2;
      } else if (c == '|') {
        if (!next_is('|')) fail("a pipe");
        out.push_back({Token::Or, "||", line_});
        pos_ += 2;
      } else if (std::strchr("()<>`", c) != nullptr) {
        fail(std::string("`") + c + "`");
      } else {
        std::size_t start = pos_;
        int first_line = line_;
        skip_word();
        out.push_back({Token::Word, text_.substr(start, pos_ - start), first_line});
      }
    }
  }

  bool next_is(char c) const { return pos_ + 1 < text_.size() && text_[pos_ + 1] == c; }

  [[noreturn]] void fail(const std::string& what) const {
    throw NeedsShell{origin_ + ":" + std::to_string(line_) + ": " + what};
  }

  // To the end of the word: blanks and operators end it only outside quotes and ${...}.
  void skip_word() {
    enum Context { Unquoted, Double, Brace };
    std::vector<Context> stack = {Unquoted};
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      Context here = stack.back();
      if (here == Unquoted && stack.size() == 1 && std::strchr(" \t\r\n;&|()<>", c) != nullptr) return;
      if (c == '`') fail("command substitution");
      if (c == '\n') ++line_;
      if (c == '\\') {
        if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++line_;
        pos_ += 2;
        continue;
      }
      if (c == '\'' && here != Double) {
        std::size_t end = text_.find('\'', pos_ + 1);
        if (end == std::string::npos) fail("an unterminated quote");
        for (std::size_t i = pos_; i < end; ++i) line_ += text_[i] == '\n';
        pos_ = end + 1;
        continue;
      }
      if (c == '$' && next_is('{')) {
        stack.push_back(Brace);
        pos_ += 2;
        continue;
      }
      if (c == '"') {
        if (here == Double) stack.pop_back();
        else stack.push_back(Double);
      } else if (c == '}' && here == Brace) {
        stack.pop_back();
      }
      ++pos_;
    }
    if (stack.size() != 1) fail("an unterminated quote or ${");
  }

  const std::string& text_;
  const std::string& origin_;
  bool lenient_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

// Recursive descent over the tokens, executing as it goes; `active` false parses a branch
// that is not taken without running it.
class EnvScript::Parser {
 public:
  Parser(EnvScript& shell, std::vector<Token> tokens, const std::string& origin)
      : shell_(shell), tokens_(std::move(tokens)), origin_(origin), lenient_(shell.mode_ == Mode::Lenient) {}

  void run() {
    list(true, {});
    if (peek().kind != Token::End) fail("unexpected `" + peek().text + "`");
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  bool at_keyword(const char* word) const { return peek().kind == Token::Word && peek().text == word; }

  [[noreturn]] void fail(const std::string& what) const {
    throw NeedsShell{origin_ + ":" + std::to_string(peek().line) + ": " + what};
  }

  void expect(const char* word) {
    if (!at_keyword(word)) fail(std::string("expected `") + word + "`");
    ++pos_;
  }

  // Commands up to one of `ends` (a keyword in command position) or the end.
  int list(bool active, const std::set<std::string>& ends) {
    int status = 0;
    for (;;) {
      while (peek().kind == Token::Newline || peek().kind == Token::Semi) ++pos_;
      if (peek().kind == Token::End) return status;
      if (peek().kind == Token::Word && ends.count(peek().text)) return status;
      // Lenient: the unit left out is a whole top-level statement (an if with its
      // branches); deeper, an error unwinds to it, so each statement is parsed twice at most.
      status = lenient_ && depth_ == 0 ? and_or_or_skip(active) : and_or(active);
    }
  }

  // Lenient, top level: the statement is parsed first, to know where it ends, then run;
  // one not understood leaves the variables as they were before it.
  int and_or_or_skip(bool active) {
    const std::size_t start = pos_;
    const int depth = depth_;
    try {
      and_or(false);
    } catch (const NeedsShell&) {
      depth_ = depth;
      while (peek().kind != Token::Newline && peek().kind != Token::End) ++pos_;
      return 1;
    }
    if (!active) return 0;
    const std::size_t end = pos_;
    pos_ = start;
    auto before = shell_.variables_;
    try {
      return and_or(true);
    } catch (const NeedsShell&) {
      shell_.variables_ = std::move(before);
      depth_ = depth;
      pos_ = end;
      return 1;
    }
  }

  int and_or(bool active) {
    int status = command(active);
    while (peek().kind == Token::And || peek().kind == Token::Or) {
      bool run_next = peek().kind == Token::And ? status == 0 : status != 0;
      ++pos_;
      while (peek().kind == Token::Newline) ++pos_;
      int next = command(active && run_next);
      if (active && run_next) status = next;
    }
    return status;
  }

  int command(bool active) {
    if (peek().kind != Token::Word) fail("unexpected `" + peek().text + "`");
    const std::string& first = peek().text;
    if (first == "if") return if_clause(active);
    if (!active && (first == "for" || first == "while" || first == "until")) return skipped_loop();
    if (!active && first == "case") return skipped_case();
    static const std::set<std::string> compound = {"for", "while", "until", "case", "{", "}", "function", "select",
                                                   "then", "elif", "else", "fi", "do", "done", "esac", "!"};
    if (compound.count(first)) fail("`" + first + "`");
    std::vector<std::string> words;
    bool unknown = false;
    for (; peek().kind == Token::Word || peek().kind == Token::Unknown; ++pos_) {
      unknown = unknown || peek().kind == Token::Unknown;
      words.push_back(peek().text);
    }
    if (active && unknown) fail("`" + words.back() + "`");
    return active ? simple(words) : 0;
  }

  // Nesting a shell would take but no environment file needs: the reader recurses.
  static constexpr int kMaxNesting = 64;

  void enter() {
    if (++depth_ > kMaxNesting) fail("nesting deeper than " + std::to_string(kMaxNesting));
  }

  int if_clause(bool active) {
    enter();
    expect("if");
    int condition = list(active, {"then"});
    expect("then");
    bool taken = active && condition == 0;
    int status = list(taken, {"elif", "else", "fi"});
    while (at_keyword("elif")) {
      ++pos_;
      int again = list(active && !taken, {"then"});
      expect("then");
      bool this_one = active && !taken && again == 0;
      int body = list(this_one, {"elif", "else", "fi"});
      if (this_one) status = body;
      taken = taken || this_one;
    }
    if (at_keyword("else")) {
      ++pos_;
      int body = list(active && !taken, {"fi"});
      if (active && !taken) status = body;
      taken = true;
    }
    expect("fi");
    --depth_;
    return active && !taken ? 0 : status;
  }

  // `for NAME in WORDS; do ... done`, `while LIST; do ... done` (or until), parsed only:
  // a branch not taken, or a lenient reading finding where the loop ends.
  int skipped_loop() {
    enter();
    if (tokens_[pos_++].text == "for") {
      if (peek().kind != Token::Word) fail("a for without a name");
      ++pos_;
      while (peek().kind == Token::Word && peek().text != "do") ++pos_;
    } else {
      list(false, {"do"});
    }
    while (peek().kind == Token::Newline || peek().kind == Token::Semi) ++pos_;
    expect("do");
    list(false, {"done"});
    expect("done");
    --depth_;
    return 0;
  }

  // `case ... esac`, parsed only as far as its end (its patterns hold `)`, which the
  // tokenizer does not read: only a lenient reading gets here with the tokens).
  int skipped_case() {
    while (peek().kind != Token::End && !at_keyword("esac")) ++pos_;
    expect("esac");
    return 0;
  }

  std::string expand(const std::string& word, bool as_argument) {
    std::string value;
    WordShape shape;
    if (!expand_word(word, [this](const std::string& name) { return shell_.value(name); }, &value, &shape))
      fail("`" + word + "` needs a shell");
    // Outside assignments an unquoted expansion is split (or vanishes when empty) and an
    // unquoted pattern is matched against files: only a shell knows the outcome.
    if (as_argument && shape.unquoted_expansion && (value.empty() || value.find_first_of(" \t\n") != std::string::npos))
      fail("`" + word + "` is split into fields");
    if (as_argument && shape.unquoted_glob) fail("`" + word + "` is a pattern");
    return value;
  }

  static bool is_assignment(const std::string& word) {
    auto eq = word.find('=');
    return eq != std::string::npos && eq > 0 && is_shell_variable_name(word.substr(0, eq));
  }

  void assignment(const std::string& word, bool exported) {
    auto eq = word.find('=');
    std::string name = word.substr(0, eq), value = expand(word.substr(eq + 1), false);
    if (exported) shell_.set_exported(name, value);
    else shell_.assign(name, value);
  }

  int simple(const std::vector<std::string>& words) {
    std::size_t first_command = 0;
    while (first_command < words.size() && is_assignment(words[first_command])) ++first_command;
    if (first_command == words.size()) {
      for (const auto& w : words) assignment(w, false);
      return 0;
    }
    if (first_command > 0) fail("an assignment before a command");
    const std::string& name = words[0];
    std::vector<std::string> args(words.begin() + 1, words.end());
    if (name == "export") {
      for (const auto& w : args) {
        if (is_assignment(w)) assignment(w, true);
        else if (is_shell_variable_name(w)) shell_.mark_exported(w);
        else fail("export " + w);
      }
      return 0;
    }
    if (name == "unset") {
      for (const auto& w : args) {
        if (w == "-v") continue;
        if (!is_shell_variable_name(w)) fail("unset " + w);
        shell_.unset(w);
      }
      return 0;
    }
    if (name == "true" || name == ":") return 0;
    if (name == "false") return 1;
    if (name == "[" || name == "test") {
      if (name == "[") {
        if (args.empty() || args.back() != "]") fail("`[` without `]`");
        args.pop_back();
      }
      std::vector<std::string> values;
      for (const auto& a : args) values.push_back(expand(a, true));
      return test(values) ? 0 : 1;
    }
    fail("the command `" + name + "`");
  }

  bool test(const std::vector<std::string>& a) {
    if (a.empty()) return false;
    if (a[0] == "!" && a.size() > 1) return !test(std::vector<std::string>(a.begin() + 1, a.end()));
    if (a.size() == 1) return !a[0].empty();
    if (a.size() == 2) {
      const std::string& op = a[0];
      const std::string& operand = a[1];
      if (op == "-n") return !operand.empty();
      if (op == "-z") return operand.empty();
      if (op.size() == 2 && op[0] == '-' && std::strchr("dfexrsLh", op[1]) != nullptr) return file_test(op[1], operand);
    }
    if (a.size() == 3 && a[1] == "=") return a[0] == a[2];
    if (a.size() == 3 && a[1] == "!=") return a[0] != a[2];
    fail("a test the reader does not know");
  }

  bool file_test(char op, const std::string& path) {
    std::string where;
    if (!path.empty() && path[0] == '/') where = shell_.root_ == "/" ? path : shell_.root_ + path;
    else if (shell_.root_ == "/") where = path;
    else fail("a relative path in a file test");
    struct stat st {};
    if (op == 'L' || op == 'h') return ::lstat(where.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
    if (::stat(where.c_str(), &st) != 0) return false;
    switch (op) {
      case 'd': return S_ISDIR(st.st_mode);
      case 'f': return S_ISREG(st.st_mode);
      case 's': return st.st_size > 0;
      case 'x': return ::access(where.c_str(), X_OK) == 0;
      case 'r': return ::access(where.c_str(), R_OK) == 0;
      default: return true;  // -e
    }
  }

  EnvScript& shell_;
  std::vector<Token> tokens_;
  const std::string& origin_;
  bool lenient_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

void EnvScript::run(const std::string& text, const std::string& origin) {
  const bool lenient = mode_ == Mode::Lenient;
  try {
    Parser(*this, Tokenizer(text, origin, lenient).tokens(), origin).run();
  } catch (const NeedsShell&) {
    if (!lenient) throw;  // lenient: what stays unread after a statement that ends nowhere
  }
}

const std::string* EnvScript::value(const std::string& name) const {
  auto it = variables_.find(name);
  if (it != variables_.end() && it->second.set) return &it->second.value;
  if (mode_ == Mode::Strict && set_by_the_shell(name)) throw NeedsShell{"$" + name + " is the shell's own"};
  return nullptr;
}

bool EnvScript::is_set(const std::string& name) const {
  auto it = variables_.find(name);
  return it != variables_.end() && it->second.set;
}

void EnvScript::assign(const std::string& name, const std::string& value) {
  Variable& v = variables_[name];
  v.value = value;
  v.set = true;
}

void EnvScript::set_exported(const std::string& name, const std::string& value) {
  assign(name, value);
  variables_[name].exported = true;
}

void EnvScript::mark_exported(const std::string& name) { variables_[name].exported = true; }

void EnvScript::unset(const std::string& name) { variables_.erase(name); }

EnvMap EnvScript::exported() const {
  EnvMap out;
  for (const auto& [name, v] : variables_)
    if (v.set && v.exported) out[name] = v.value;
  return out;
}

}  // namespace capsa::runtime
