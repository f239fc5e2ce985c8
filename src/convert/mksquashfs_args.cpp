#include "convert/mksquashfs_args.hpp"

#include <charconv>
#include <set>
#include <sstream>
#include <vector>

#include "convert/convert.hpp"
#include "util/error.hpp"

namespace capsa::convert {
namespace {

[[noreturn]] void fail(const std::string& problem) { throw Error("--mksquashfs-args: " + problem); }

std::uint64_t number(const std::string& option, const std::string& text) {
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    fail(option + " \"" + text + "\" is not a number");
  return value;
}

// mksquashfs's block size: bytes, or a number with K or M (KiB, MiB).
std::uint32_t block_size(const std::string& option, std::string text) {
  std::uint64_t scale = 1;
  if (!text.empty() && (text.back() == 'K' || text.back() == 'k')) scale = 1024;
  if (!text.empty() && (text.back() == 'M' || text.back() == 'm')) scale = std::uint64_t{1024} * 1024;
  if (scale != 1) text.pop_back();
  const std::uint64_t size = number(option, text) * scale;
  if (size < 4096 || size > std::uint64_t{1024} * 1024 || (size & (size - 1)) != 0)
    fail(option + " " + std::to_string(size) + ": the block size must be a power of two from 4K to 1M");
  return static_cast<std::uint32_t>(size);
}

}  // namespace

void apply_mksquashfs_args(const std::string& args, PackOptions& options) {
  std::istringstream in(args);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  // mksquashfs's options whose effect capsa's packer has anyway.
  static const std::set<std::string> nothing_to_do = {"-noappend",    "-no-xattrs", "-quiet",
                                                      "-no-progress", "-progress",  "-no-recovery"};
  std::optional<int> level;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& option = words[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= words.size()) fail(option + " needs a value");
      return words[++i];
    };
    if (nothing_to_do.count(option) != 0) continue;
    if (option == "-comp") {
      const std::string& name = value();
      if (name != "gzip" && name != "xz" && name != "zstd")
        fail("-comp " + name + " is not supported (capsa's packer writes gzip, xz or zstd)");
      options.compression = name;
    } else if (option == "-b" || option == "-block-size") {
      options.block_size = block_size(option, value());
    } else if (option == "-Xcompression-level") {
      level = static_cast<int>(number(option, value()));
    } else if (option == "-processors") {
      const std::uint64_t n = number(option, value());
      if (n == 0 || n > 4096) fail("-processors " + std::to_string(n) + " is out of range (expected 1..4096)");
      options.threads = static_cast<unsigned>(n);
    } else if (option == "-mem") {
      value();  // mksquashfs's cache size: capsa's packer streams with fixed buffers
    } else if (option == "-all-root" || option == "-root-owned") {
      options.force_uid = 0;
      options.force_gid = 0;
    } else if (option == "-force-uid" || option == "-force-gid") {
      const std::uint64_t id = number(option, value());
      if (id > 0xfffffffeu) fail(option + " " + std::to_string(id) + " is not a valid id");
      (option == "-force-uid" ? options.force_uid : options.force_gid) = static_cast<std::uint32_t>(id);
    } else {
      fail("mksquashfs option " + option +
           " is not supported (capsa packs squashfs itself; it takes -comp, -b, -Xcompression-level, -processors, "
           "-all-root, -force-uid, -force-gid, -noappend, -no-xattrs, -mem)");
    }
  }
  if (level) {
    // Checked once -comp is known, in either order, with mksquashfs's ranges.
    const int top = options.compression == "gzip" ? 9 : options.compression == "zstd" ? 22 : 0;
    if (top == 0) fail("-Xcompression-level does not apply to " + options.compression + " (gzip or zstd only)");
    if (*level < 1 || *level > top)
      fail("-Xcompression-level " + std::to_string(*level) + " is out of range for " + options.compression + " (1.." +
           std::to_string(top) + ")");
    options.level = level;
  }
}

}  // namespace capsa::convert
