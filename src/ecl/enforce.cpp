#include "ecl/enforce.hpp"

#include <fcntl.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <optional>
#include <set>

#include "sif/image.hpp"
#include "signing/verify.hpp"
#include "util/fd.hpp"

namespace capsa::ecl {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "none" : out;
}

bool listed(const ExecGroup& group, const std::string& fingerprint) {
  return std::find(group.keyfps.begin(), group.keyfps.end(), fingerprint) != group.keyfps.end();
}

// The fingerprints that signed every verified object (Apptainer's AllSignedBy).
std::vector<std::string> signed_all(const signing::VerificationResult& result) {
  std::set<std::uint32_t> ids;
  for (const auto& signature : result.signatures)
    for (const auto& d : signature.objects) ids.insert(d.id);
  std::vector<std::string> common;
  bool first = true;
  for (std::uint32_t id : ids) {
    std::vector<std::string> signers = result.signers_of(id);
    if (first) {
      common = signers;
      first = false;
      continue;
    }
    std::erase_if(
        common, [&](const std::string& fp) { return std::find(signers.begin(), signers.end(), fp) == signers.end(); });
  }
  return common;
}

class Judge {
 public:
  // `image` names the image in messages; `read_from` is the open file it is judged by.
  Judge(const ExecutionControlList& list, const ExecGroup& group, std::string image, std::string read_from)
      : list_(list), group_(group), image_(std::move(image)), read_from_(std::move(read_from)) {}

  void blacklist() const {
    std::optional<sif::Image> sif = open_sif();
    if (!sif) return;
    for (const auto& d : sif->objects()) {
      if (d.data_type != sif::DataType::Signature) continue;
      const std::string fingerprint = signing::fingerprint_hex(d.signature().entity);
      if (listed(group_, fingerprint))
        refuse("signature object " + std::to_string(d.id) + " is by key " + fingerprint + ", which it forbids");
    }
  }

  void whitelist(const std::vector<std::string>& keyring_files) const {
    if (!open_sif()) refuse(what_it_is() + " carries no signature, and only SIF images signed by its keys may run");
    signing::VerifyOptions options;
    options.keyring_files = keyring_files;
    options.skip_untrusted = true;
    options.legacy = list_.legacy;
    signing::VerificationResult result;
    try {
      result = signing::verify_image(read_from_, options);
    } catch (const Error& e) {
      std::string reason = e.what();
      if (reason.starts_with(read_from_ + ": ")) reason.erase(0, read_from_.size() + 2);
      refuse("its signatures do not verify with the administrator's keys (global-pgp-public): " + reason);
    }
    const std::vector<std::string> signers = signed_all(result);
    std::vector<std::string> missing;
    for (const auto& key : group_.keyfps)
      if (std::find(signers.begin(), signers.end(), key) == signers.end()) missing.push_back(key);
    if (group_.mode == Mode::whitelist && missing.size() == group_.keyfps.size())
      refuse("it is not signed by any of its keys (" + joined(group_.keyfps) + "; signed by " + joined(signers) + ")");
    if (group_.mode == Mode::whitestrict && !missing.empty())
      refuse("it is not signed by every one of its keys (missing " + joined(missing) + ")");
  }

 private:
  [[noreturn]] void refuse(const std::string& reason) const {
    throw ExecutionRefused(image_ + ": refused by execgroup \"" + group_.tagname + "\" (mode " +
                           std::string(name_of(group_.mode)) + ", " +
                           (group_.dirpath.empty() ? std::string("no dirpath") : "dirpath " + group_.dirpath) +
                           ") of " + list_.path + ": " + reason);
  }

  // The image as a SIF, or nullopt for a sandbox directory or another kind of image.
  std::optional<sif::Image> open_sif() const {
    struct stat st {};
    if (::stat(read_from_.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    try {
      return sif::Image::open(read_from_);
    } catch (const FormatError&) {
      return std::nullopt;
    }
  }

  std::string what_it_is() const {
    struct stat st {};
    return ::stat(read_from_.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? "a sandbox directory"
                                                                       : "an image that is no SIF";
  }

  const ExecutionControlList& list_;
  const ExecGroup& group_;
  std::string image_;
  std::string read_from_;
};

}  // namespace

std::optional<FileIdentity> enforce(const ExecutionControlList& list, const std::string& image,
                                    const std::vector<std::string>& keyring_files) {
  if (!list.activated) return std::nullopt;
  // Opened first, and the directory read from the open file: a path swapped after a
  // realpath() could otherwise be judged by one directory's group and open another's file.
  const UniqueFd opened(::open(image.c_str(), O_RDONLY | O_CLOEXEC));
  if (!opened) throw_errno(image);
  char buffer[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(opened.get());
  const ssize_t length = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
  if (length <= 0) throw_errno(image);
  const std::string resolved(buffer, static_cast<std::size_t>(length));
  const std::string directory = resolved.substr(0, std::max<std::size_t>(resolved.rfind('/'), 1));
  const ExecGroup* group = list.group_for(directory);
  if (group == nullptr)
    throw ExecutionRefused(resolved + ": refused by the execution control list " + list.path +
                           ": no execgroup has dirpath " + directory + ", and none is without a dirpath");
  const std::optional<FileIdentity> identity = FileIdentity::of_descriptor(opened.get());
  if (!identity) throw_errno(resolved);
  Judge judge(list, *group, resolved, "/proc/self/fd/" + std::to_string(opened.get()));
  if (group->mode == Mode::blacklist)
    judge.blacklist();
  else
    judge.whitelist(keyring_files);
  return identity;
}

}  // namespace capsa::ecl
