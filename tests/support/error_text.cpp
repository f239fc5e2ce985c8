#include "support/error_text.hpp"

#include "util/error.hpp"

namespace capsa::test {

std::string error_text(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace capsa::test
