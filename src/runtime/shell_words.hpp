#pragma once
// One shell word as environment files write them: 'single' and "double" quotes,
// backslashes, $NAME, ${NAME} and the ${NAME:-W}, ${NAME-W}, ${NAME:+W}, ${NAME+W}
// operators. Anything that needs a real shell (command substitution, arithmetic, special
// parameters such as $? or $$, other ${...} operators, unquoted blanks or operators,
// an unquoted ~) is refused, so that callers can fall back to one.
#include <functional>
#include <string>

#include "runtime/environment.hpp"

namespace capsa::runtime {

// A variable's value, or nullptr when it is unset.
using VariableLookup = std::function<const std::string*(const std::string& name)>;

// What field splitting and pathname expansion would do to the word outside an
// assignment: callers that pass words to a command refuse such words.
struct WordShape {
  bool unquoted_expansion = false;  // a $... outside quotes (split on blanks, dropped when empty)
  bool unquoted_glob = false;       // a *, ? or [ outside quotes (pathname expansion)
};

// The value of `word`; false when it needs more of a shell.
bool expand_word(const std::string& word, const VariableLookup& lookup, std::string* value, WordShape* shape = nullptr);

// The same over a plain map, where a missing name is an unset variable.
bool expand_shell_word(const std::string& word, const EnvMap& env, std::string* value);

bool is_shell_variable_name(const std::string& name);

}  // namespace capsa::runtime
