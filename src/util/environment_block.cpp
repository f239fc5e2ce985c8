#include "util/environment_block.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>

#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa {
namespace {

struct Block {
  std::uintptr_t start = 0;
  std::uintptr_t end = 0;
  bool holds(const char* p) const {
    auto address = reinterpret_cast<std::uintptr_t>(p);
    return start != 0 && address >= start && address < end;
  }
};

// env_start and env_end: fields 50 and 51 of /proc/self/stat (proc(5)).
Block inherited_block() {
  std::string stat;
  try {
    stat = read_whole_file("/proc/self/stat");
  } catch (const Error&) {
    return {};
  }
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // field 3 onwards
  std::string field;
  Block block;
  for (int number = 3; fields >> field && number <= 51; ++number) {
    if (number == 50) block.start = std::stoull(field);
    if (number == 51) block.end = std::stoull(field);
  }
  return block.end > block.start ? block : Block{};
}

}  // namespace

void wipe_inherited_environment() {
  Block block = inherited_block();
  ::clearenv();
  if (block.start != 0) std::memset(reinterpret_cast<void*>(block.start), 0, block.end - block.start);
}

void hide_inherited_values(std::span<const char* const> names) {
  Block block;  // read only when some variable is set: most starts have none
  for (const char* name : names) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    if (block.start == 0) block = inherited_block();
    if (!block.holds(value)) continue;  // already a private copy
    char* original = const_cast<char*>(value);
    // setenv copies the value: getenv returns the copy from now on.
    if (::setenv(name, value, 1) != 0) continue;
    std::memset(original, 0, std::strlen(original));
  }
}

}  // namespace capsa
