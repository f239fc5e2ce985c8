#include "archive/tar_index.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <cerrno>
#include <memory>
#include <new>
#include <sstream>

#include "archive/archive_reader.hpp"
#include "util/error.hpp"

namespace capsa::archive {
namespace {

std::string error_of(struct archive* a) {
  const char* message = archive_error_string(a);
  return message ? message : "unreadable archive";
}

}  // namespace

std::string normalize_member_name(const std::string& name) {
  std::vector<std::string> parts;
  std::istringstream in(name);
  for (std::string part; std::getline(in, part, '/');) {
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : "/") + part;
  return out;
}

TarIndex::TarIndex(const std::string& path) : path_(path) {
  ArchiveReader a = new_archive_reader();
  // Compressed archives are recognised only to be refused by name: their members have
  // no byte range in the file to read in place.
  archive_read_support_filter_gzip(a.get());
  archive_read_support_filter_zstd(a.get());
  archive_read_support_filter_xz(a.get());
  archive_read_support_filter_bzip2(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), std::size_t{64} << 10) != ARCHIVE_OK) {
    // libarchive reports an unrecognised format with errno EILSEQ: only a failed open(2)
    // is a system error.
    const int err = archive_errno(a.get());
    if (err > 0 && err < 4096 && error_of(a.get()).find("Failed to open") != std::string::npos)
      throw SystemError(path, err);
    throw FormatError(path + ": not a tar archive (" + error_of(a.get()) + ")");
  }
  for (bool first = true;; first = false) {
    archive_entry* entry = nullptr;
    const int ret = archive_read_next_header(a.get(), &entry);
    if (ret == ARCHIVE_EOF) break;
    if (ret == ARCHIVE_RETRY) continue;
    if (ret < ARCHIVE_WARN)
      throw FormatError(
          path + ": " +
          (first ? "not a tar archive (" + error_of(a.get()) + ")" : "unreadable tar archive: " + error_of(a.get())));
    if (first && archive_filter_count(a.get()) > 1)
      throw FormatError(path + ": a compressed archive (" + archive_filter_name(a.get(), 0) +
                        "); decompress it first, e.g. `gunzip -k`, and use the .tar");
    const char* raw = archive_entry_pathname(entry);
    const std::string name = normalize_member_name(raw ? raw : "");
    if (name.empty()) continue;
    if (const char* hardlink = archive_entry_hardlink(entry)) {
      links_[name] = normalize_member_name(hardlink);
    } else if (archive_entry_filetype(entry) == AE_IFLNK) {
      const char* target = archive_entry_symlink(entry);
      const std::string dir = name.find('/') == std::string::npos ? "" : name.substr(0, name.rfind('/') + 1);
      const std::string t = target ? target : "";
      links_[name] = normalize_member_name(t.starts_with('/') ? t : dir + t);
    } else if (archive_entry_filetype(entry) == AE_IFREG && archive_entry_sparse_count(entry) == 0) {
      // After the header(s), libarchive has consumed exactly up to the member's data.
      const la_int64_t offset = archive_filter_bytes(a.get(), -1);
      files_[name] = {static_cast<std::uint64_t>(offset),
                      static_cast<std::uint64_t>(std::max<la_int64_t>(archive_entry_size(entry), 0))};
    }
  }
}

std::string TarIndex::resolve(std::string name) const {
  name = normalize_member_name(name);
  for (int hops = 0; hops < 16; ++hops) {
    auto link = links_.find(name);
    if (link == links_.end()) return name;
    name = link->second;
  }
  return name;
}

const TarMember* TarIndex::find(const std::string& name) const {
  auto it = files_.find(resolve(name));
  return it == files_.end() ? nullptr : &it->second;
}

}  // namespace capsa::archive
