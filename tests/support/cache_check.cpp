#include "support/cache_check.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cache/file_lock.hpp"
#include "cache/key.hpp"
#include "oci/digest.hpp"
#include "sif/format.hpp"
#include "sif/image.hpp"

namespace capsa::test {
namespace {

namespace fs = std::filesystem;

std::string hash_of_file(const std::string& path, const std::string& algorithm) {
  oci::Hasher hasher(algorithm);
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    hasher.update(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  }
  return hasher.finish().hex();
}

void check_entry(const std::string& root, const std::string& relative, CacheCheck& report) {
  const std::string path = root + "/" + relative;
  if (relative.ends_with(".lock")) {
    if (!cache::FileLock::try_acquire(path, cache::LockMode::exclusive))
      report.problems.push_back(relative + ": still locked");
    return;
  }
  if (relative.ends_with(".partial")) {
    report.partials.push_back(relative);
    return;
  }
  auto key = cache::Key::from_relative_path(relative);
  if (!key) {
    report.problems.push_back(relative + ": not an entry, a partial or a lock");
    return;
  }
  if (fs::is_symlink(path) || !fs::is_regular_file(path)) {
    report.problems.push_back(relative + ": not a regular file");
    return;
  }
  if (key->type() == cache::EntryType::blob) {
    // blobs/<algorithm>/<hex>
    std::string algorithm = fs::path(relative).parent_path().filename().string();
    std::string hex = fs::path(relative).filename().string();
    if (hash_of_file(path, algorithm) != hex) report.problems.push_back(relative + ": content does not match its digest");
    else ++report.blobs;
    return;
  }
  try {
    sif::Image image = sif::Image::open(path);
    const sif::Descriptor* primary = image.primary_partition();
    if (primary == nullptr || primary->partition().fs_type != sif::FsType::Squashfs)
      report.problems.push_back(relative + ": a SIF without a squashfs primary partition");
    else ++report.sifs;
  } catch (const std::exception& e) {
    report.problems.push_back(relative + ": not a valid SIF: " + e.what());
  }
}

}  // namespace

CacheCheck check_cache(const std::string& root) {
  CacheCheck report;
  std::error_code ec;
  for (const char* area : {"blobs", "sif"}) {
    for (auto it = fs::recursive_directory_iterator(root + "/" + area, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory()) continue;
      check_entry(root, fs::relative(it->path(), root).string(), report);
    }
  }
  for (const auto& item : fs::directory_iterator(root + "/tmp", ec)) {
    const std::string name = item.path().filename().string();
    if (name.ends_with(".lock")) continue;
    // A live creator holds <item>.lock; one that can be taken belongs to nobody.
    const std::string lock = item.path().string() + ".lock";
    if (!fs::exists(lock) || cache::FileLock::try_acquire(lock, cache::LockMode::exclusive)) {
      report.stale_temporaries.push_back("tmp/" + name);
    }
  }
  return report;
}

}  // namespace capsa::test
