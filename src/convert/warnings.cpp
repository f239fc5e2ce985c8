#include "convert/warnings.hpp"

namespace capsa::convert {

void Warnings::add(const std::string& kind, std::string line) {
  if (++counts_[kind] <= limit_) lines_.push_back(std::move(line));
}

std::vector<std::string> Warnings::finish() const {
  std::vector<std::string> out = lines_;
  for (const auto& [kind, count] : counts_)
    if (count > limit_)
      out.push_back("... and " + std::to_string(count - limit_) + " more " + kind + " warnings");
  return out;
}

}  // namespace capsa::convert
