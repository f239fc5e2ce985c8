#pragma once
// One error style for the whole engine: exceptions that carry their context.
// The CLI turns any capsa::Error into a single line and a non-zero exit code.

#include <stdexcept>
#include <string>

namespace capsa {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// The input (a file, an image, a reference) is malformed or unsupported.
class FormatError : public Error {
 public:
  using Error::Error;
};

// A system call failed; the message ends with strerror(errno).
class SystemError : public Error {
 public:
  SystemError(const std::string& what, int errno_value);
  // For rethrowing with more context: `message` already ends with strerror.
  struct Preformatted {};
  static constexpr Preformatted kPreformatted{};
  SystemError(const std::string& message, int errno_value, Preformatted)
      : Error(message), errno_value_(errno_value) {}
  int errno_value() const { return errno_value_; }

 private:
  int errno_value_;
};

// An error that must end the process with a particular exit status, as a shell would:
// 127 for a command that is not found, 126 for one that cannot be executed.
class StatusError : public Error {
 public:
  StatusError(const std::string& message, int status) : Error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// Throws SystemError for the current errno.
[[noreturn]] void throw_errno(const std::string& what);

// Runs `body`; if it throws capsa::Error, rethrows it with "context: " in front.
template <typename Body>
auto with_context(const std::string& context, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const FormatError& e) {
    throw FormatError(context + ": " + e.what());
  } catch (const SystemError& e) {
    throw SystemError(context + ": " + e.what(), e.errno_value(), SystemError::kPreformatted);
  } catch (const Error& e) {
    throw Error(context + ": " + e.what());
  }
}

}  // namespace capsa
