#pragma once
// Collects one-line warnings, capping each kind so that an image with thousands of
// device nodes gives a readable report: the first few lines, then one summary line.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace capsa::convert {

class Warnings {
 public:
  explicit Warnings(std::size_t lines_per_kind = 20) : limit_(lines_per_kind) {}
  // `kind` groups warnings for the cap ("device", "path"...); `line` is the message.
  void add(const std::string& kind, std::string line);
  // The collected lines followed by one "... and N more <kind> warnings" per capped kind.
  std::vector<std::string> finish() const;

 private:
  std::size_t limit_;
  std::vector<std::string> lines_;
  std::map<std::string, std::size_t> counts_;
};

}  // namespace capsa::convert
