#include "image/overlay_create.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "sif/image.hpp"
#include "sif/writer.hpp"
#include "squashfs/reader.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/find_executable.hpp"
#include "util/run_program.hpp"

namespace capsa::image {
namespace {

namespace fs = std::filesystem;

// Removes a path (file or tree) when it goes out of scope.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
  }
};

std::string tool(const std::string& name) {
  std::string path = find_system_program(name);
  if (path.empty()) throw Error(name + " was not found (install e2fsprogs)");
  return path;
}

void run_tool(const std::vector<std::string>& argv, const std::string& what) {
  Captured result = run_captured(Command{argv}, "");
  if (result.status.success()) return;
  std::string message = result.err;
  while (!message.empty() && message.back() == '\n') message.pop_back();
  throw Error(what + ": " + argv[0] + " failed (exit status " + std::to_string(result.status.code()) + "): " + message);
}

// The arch of the new partition: the SIF's primary partition's, else the machine's.
std::string partition_arch(const sif::Image& image) {
  const sif::Descriptor* primary = image.primary_partition();
  std::string arch = primary ? primary->partition().arch : "unknown";
  return arch == "unknown" ? sif::host_arch_name() : arch;
}

// An existing image: a SIF that may take an overlay partition, or an error (Apptainer's
// checks and words).
void check_existing_sif(const std::string& path) {
  if (::access(path.c_str(), W_OK) != 0) throw_errno(path + " exists and cannot be written");
  UniqueFd fd = open_file(path, O_RDONLY);
  char magic[4] = {};
  if (::pread(fd.get(), magic, sizeof magic, 1080) == sizeof magic && static_cast<unsigned char>(magic[0]) == 0x53 &&
      static_cast<unsigned char>(magic[1]) == 0xEF)
    throw Error("EXT3 overlay image " + path + " already exists");
  std::optional<sif::Image> image;
  try {
    image.emplace(sif::Image::open(path));
  } catch (const FormatError&) {
    throw Error(path + " already exists and is not a SIF image: destination image must be SIF image (or a new file)");
  }
  const sif::Descriptor* primary = image->primary_partition();
  if (primary != nullptr && primary->partition().fs_type == sif::FsType::EncryptedSquashfs)
    throw Error("encrypted root FS partition in " + path + ": could not add writable overlay");
  for (const sif::Descriptor& d : image->objects()) {
    if (d.data_type == sif::DataType::Signature)
      throw Error("SIF image " + path + " is signed: could not add writable overlay");
    if (d.data_type == sif::DataType::Partition && d.partition().part_type == sif::PartType::Overlay &&
        d.partition().fs_type == sif::FsType::Ext3) {
      const std::string id = std::to_string(d.id);
      std::string message = "a writable overlay partition already exists in " + path;
      message.append(" (ID: ").append(id).append("), delete it first with \"capsa sif del ").append(id);
      message.append(" ").append(path).append("\"");
      throw Error(message);
    }
  }
}

void make_file_of_size(const std::string& path, std::int64_t size_mib, bool sparse) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) throw_errno("creating " + path);
  RemoveOnExit remove_unfinished{path};
  const off_t size = static_cast<off_t>(size_mib) << 20;
  if (sparse) {
    if (::ftruncate(fd.get(), size) != 0) throw_errno("sizing " + path);
  } else if (int err = ::posix_fallocate(fd.get(), 0, size); err != 0) {
    // Allocated up front, as Apptainer's dd of zeros: a full disk shows now, not in a container.
    if (err != EOPNOTSUPP && err != EINVAL) throw SystemError("allocating " + path, err);
    std::string zeros(1 << 20, '\0');
    for (std::int64_t i = 0; i < size_mib; ++i)
      if (::write(fd.get(), zeros.data(), zeros.size()) != static_cast<ssize_t>(zeros.size()))
        throw_errno("writing " + path);
  }
  remove_unfinished.path.clear();
}

// The staging tree mkfs.ext3 -d copies: upper/, work/ and the --create-dir directories.
std::vector<std::string> stage_layout(const std::string& root, const OverlayCreateOptions& options) {
  const mode_t perm = (::getuid() > 65535 || ::getgid() > 65535) ? 0777 : 0755;
  std::vector<std::string> made = {"/upper", "/work"};
  for (const std::string& dir : made)
    if (::mkdir((root + dir).c_str(), perm) != 0 || ::chmod((root + dir).c_str(), perm) != 0) throw_errno(root + dir);
  for (const std::string& wanted : options.create_dirs) {
    fs::path relative = fs::path(wanted).relative_path().lexically_normal();
    if (relative.empty() || *relative.begin() == "..")
      throw Error("--create-dir " + wanted + ": overlay directory created outside of overlay layout");
    std::string path = "/upper";
    for (const fs::path& part : relative) {
      if (part == ".") continue;
      path += "/" + part.string();
      if (::mkdir((root + path).c_str(), perm) == 0) {
        if (::chmod((root + path).c_str(), perm) != 0) throw_errno(root + path);
        made.push_back(path);
      } else if (errno != EEXIST) {
        throw_errno("--create-dir " + wanted);
      }
    }
  }
  return made;
}

}  // namespace

void create_overlay(const std::string& image, const OverlayCreateOptions& options, std::int64_t now) {
  if (options.size_mib < 64) throw Error("image size must be equal or greater than 64 MiB");
  const std::string mkfs = tool("mkfs.ext3");
  struct stat st {};
  const bool into_sif = ::stat(image.c_str(), &st) == 0;
  if (into_sif) check_existing_sif(image);

  const std::string file = image + ".ext3";
  make_file_of_size(file, options.size_mib, options.sparse);
  RemoveOnExit remove_file{file};

  const char* tmp = std::getenv("TMPDIR");
  std::string staging = std::string(tmp && *tmp ? tmp : "/tmp") + "/capsa-overlay-XXXXXX";
  if (::mkdtemp(staging.data()) == nullptr) throw_errno("creating a temporary directory for the overlay layout");
  RemoveOnExit remove_staging{staging};
  const std::vector<std::string> made = stage_layout(staging, options);

  // nodiscard: mke2fs would punch the allocated blocks out of the file again.
  run_tool({mkfs, "-q", "-E", "nodiscard", "-d", staging, file}, "creating the ext3 overlay " + image);
  if (options.fakeroot && ::geteuid() != 0) {
    // Root of a --fakeroot container owns them, as when Apptainer makes them in a
    // root-mapped user namespace.
    const std::string requests_file = staging + "/debugfs-requests";
    {
      std::string requests;
      for (const std::string& dir : made)
        requests.append("sif ").append(dir).append(" uid 0\nsif ").append(dir).append(" gid 0\n");
      UniqueFd out(::open(requests_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
      if (!out || ::write(out.get(), requests.data(), requests.size()) != static_cast<ssize_t>(requests.size()))
        throw_errno("writing " + requests_file);
    }
    Captured result = run_captured(Command{{tool("debugfs"), "-w", "-f", requests_file, file}}, "");
    // debugfs exits 0 whatever a request did: anything on stderr but its banner is a failure.
    std::string errors;
    for (std::size_t at = 0; at < result.err.size();) {
      std::size_t end = result.err.find('\n', at);
      if (end == std::string::npos) end = result.err.size();
      std::string line = result.err.substr(at, end - at);
      if (!line.empty() && line.rfind("debugfs ", 0) != 0) errors += line + " ";
      at = end + 1;
    }
    if (!result.status.success() || !errors.empty())
      throw Error("making root the owner of the overlay layout in " + image + ": debugfs failed: " + errors);
  }

  if (into_sif) {
    std::string arch = partition_arch(sif::Image::open(image));
    sif::add_object(image, sif::partition_input(file, sif::FsType::Ext3, sif::PartType::Overlay, arch), now);
    return;
  }
  if (::link(file.c_str(), image.c_str()) != 0) throw_errno("creating " + image);  // never over a file made meanwhile
}

}  // namespace capsa::image
