#pragma once
// The message of the capsa::Error that `body` throws, "" when it throws none: for tests
// that compare a refusal's exact words.
#include <functional>
#include <string>

namespace capsa::test {

std::string error_text(const std::function<void()>& body);

}  // namespace capsa::test
