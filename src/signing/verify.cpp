#include "signing/verify.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "sif/image.hpp"
#include "signing/certificate.hpp"
#include "signing/digest.hpp"
#include "signing/dsse.hpp"
#include "signing/integrity_metadata.hpp"
#include "signing/keyring.hpp"
#include "signing/ocsp.hpp"
#include "signing/pem_key.hpp"

namespace capsa::signing {
namespace {

using sif::Descriptor;
using sif::Image;

constexpr std::uint64_t kMaxSignatureBytes = 16 << 20;
constexpr std::string_view kClearsignBegin = "-----BEGIN PGP SIGNED MESSAGE-----";
constexpr std::string_view kLegacyPrefix = "SIFHASH:\n";

std::string object_label(const Descriptor& d) {
  return "object " + std::to_string(d.id) + " (" + std::string(sif::name_of(d.data_type)) + ")";
}

// The text a clear-signed message signs, dash-escaping undone. Only to tell legacy
// signatures ("SIFHASH:") from current ones (JSON) before choosing how to check them, as
// the reference implementation does; GnuPG does the verifying.
std::optional<std::string> clearsigned_body(std::string_view text) {
  const auto begin = text.find(kClearsignBegin);
  if (begin == std::string_view::npos) return std::nullopt;
  const auto blank = text.find("\n\n", begin);
  const auto end = text.find("\n-----BEGIN PGP SIGNATURE-----", begin);
  if (blank == std::string_view::npos || end == std::string_view::npos || blank > end) return std::nullopt;
  std::string_view body = text.substr(blank + 2, end - blank - 2 + 1);
  std::string out;
  while (!body.empty()) {
    auto eol = body.find('\n');
    std::string_view line = body.substr(0, eol == std::string_view::npos ? body.size() : eol + 1);
    body.remove_prefix(line.size());
    if (line.starts_with("- ")) line.remove_prefix(2);
    out += line;
  }
  return out;
}

bool is_legacy(std::string_view data) {
  auto body = clearsigned_body(data);
  return body && body->starts_with(kLegacyPrefix);
}

// A signature by a key outside the trusted keys, with VerifyOptions::skip_untrusted.
struct UntrustedSignature {
  std::string key;
};

struct Task {
  bool is_group = false;
  std::uint32_t id = 0;        // group or object ID
  std::uint32_t group_id = 0;  // the group the objects belong to
  std::vector<Descriptor> objects;
  bool subset_ok = false;
  bool legacy = false;
};

class Verifier {
 public:
  Verifier(const std::string& path, const VerifyOptions& options) : image_(Image::open(path)), options_(options) {
    if (options.certificate) {
      trust_certificate(*options.certificate);
      return;
    }
    for (const auto& file : options.public_key_files) keys_.push_back(PublicKey::load_pem_file(file));
  }

  VerificationResult run() {
    for (const auto& d : image_.objects())
      if (d.data_type != sif::DataType::Signature && d.group_id() == 0)
        fail(object_label(d) + " is in no object group, and SIF signatures cover groups");
    VerificationResult result;
    for (const Task& task : tasks()) {
      std::vector<Descriptor> signatures = signatures_for(task);
      if (signatures.empty()) {
        std::string message = "no signature found for ";
        message += task.is_group ? "object group " + std::to_string(task.id) : object_label(image_.object(task.id));
        if (!options_.legacy && legacy_signature_exists(task))
          message += " (it has a legacy signature: add --legacy-insecure)";
        fail(message);
      }
      std::vector<std::string> untrusted;
      bool verified = false;
      for (const Descriptor& sig : signatures) {
        try {
          result.signatures.push_back(check(task, sig));
          verified = true;
        } catch (const UntrustedSignature& skipped) {
          untrusted.push_back(skipped.key);
        }
      }
      if (!verified)
        fail(std::string(task.is_group ? "object group " + std::to_string(task.id)
                                       : object_label(image_.object(task.id))) +
             " is signed only by keys that are not trusted (" + joined(untrusted) + ")");
    }
    return result;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw VerificationError(image_.path() + ": " + message); }

  // Apptainer checks the certificate before any signature: the chain to a root, then,
  // with --ocsp-verify, its revocation status; only then does its key count.
  void trust_certificate(const CertificateOptions& options) {
    const Certificate leaf = Certificate::load_pem_file(options.certificate_file);
    std::vector<Certificate> intermediates;
    if (options.intermediates_file) intermediates = Certificate::load_pem_bundle(*options.intermediates_file);
    std::optional<std::vector<Certificate>> roots;
    if (options.roots_file) roots = Certificate::load_pem_bundle(*options.roots_file);
    const TrustStore store(roots);
    const std::vector<Certificate> chain = store.verify_chain(leaf, intermediates);
    if (options.ocsp) check_revocation(chain, store);
    keys_.push_back(leaf.public_key());
    certificate_subject_ = leaf.subject();
    key_source_ = "the key of " + leaf.label();
  }

  std::vector<std::uint32_t> all_group_ids() const {
    std::set<std::uint32_t> ids;
    for (const auto& d : image_.objects())
      if (d.group_id() != 0) ids.insert(d.group_id());
    if (ids.empty()) fail("nothing in the image is signed (it has no object groups)");
    return {ids.begin(), ids.end()};
  }

  Task group_task(std::uint32_t group, bool legacy) const {
    Task task{true, group, group, group_objects(image_, group), false, legacy};
    if (task.objects.empty()) fail("there is no object group " + std::to_string(group) + " (see `capsa sif list`)");
    return task;
  }

  Task object_task(std::uint32_t id, bool legacy) const {
    std::optional<Descriptor> found;
    for (const auto& d : image_.objects())
      if (d.id == id) found = d;
    if (!found) fail("there is no object " + std::to_string(id) + " (see `capsa sif list`)");
    if (!legacy && found->group_id() == 0)
      fail(object_label(*found) + " is in no object group, so no signature covers it");
    return Task{false, id, found->group_id(), {*found}, true, legacy};
  }

  std::vector<Task> tasks() const {
    std::vector<Task> out;
    const bool legacy = options_.legacy;
    std::set<std::uint32_t> object_ids;
    if (options_.object_id) object_ids.insert(*options_.object_id);
    if (legacy && options_.all) {
      for (const auto& d : image_.objects())
        if (d.data_type != sif::DataType::Signature && d.group_id() != 0) object_ids.insert(d.id);
    } else if (legacy && !options_.group_id && object_ids.empty()) {
      // Apptainer checks the primary partition's own signature when nothing is chosen.
      const Descriptor* primary = image_.primary_partition();
      if (primary == nullptr)
        fail("the image has no primary partition; choose what to verify with --group-id or --sif-id");
      object_ids.insert(primary->id);
    }
    if (options_.group_id) {
      out.push_back(group_task(*options_.group_id, legacy));
    } else if (object_ids.empty()) {
      for (std::uint32_t group : all_group_ids()) out.push_back(group_task(group, legacy));
    }
    for (std::uint32_t id : object_ids) out.push_back(object_task(id, legacy));
    return out;
  }

  std::string signature_data(const Descriptor& sig) const { return image_.read_object(sig, kMaxSignatureBytes); }

  std::vector<Descriptor> linked_signatures(const Task& task, bool to_group) const {
    std::vector<Descriptor> out;
    for (const auto& d : image_.objects()) {
      if (d.data_type != sif::DataType::Signature) continue;
      if (to_group && d.linked_to_group() && d.linked_id() == task.group_id) out.push_back(d);
      if (!to_group && !d.linked_to_group() && d.linked_id() == task.id) out.push_back(d);
    }
    return out;
  }

  std::vector<Descriptor> signatures_for(const Task& task) const {
    if (task.legacy && !task.is_group) return linked_signatures(task, false);
    std::vector<Descriptor> out;
    for (const auto& d : linked_signatures(task, true))
      if (is_legacy(signature_data(d)) == task.legacy) out.push_back(d);
    return out;
  }

  bool legacy_signature_exists(const Task& task) const {
    for (const auto& d : linked_signatures(task, true))
      if (is_legacy(signature_data(d))) return true;
    for (const auto& object : task.objects) {
      Task single{false, object.id, task.group_id, {object}, true, true};
      if (!linked_signatures(single, false).empty()) return true;
    }
    return false;
  }

  static std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
  }

  // Asks the keyservers for `key`; true when they had it and it is now trusted for this
  // verification. A keyserver that cannot be reached fails the verification in one line.
  bool fetch_into_trusted(const std::string& key, const std::string& sig_label) {
    std::optional<std::string> armored;
    try {
      armored = options_.fetch_key(key);
    } catch (const Error& e) {
      fail(sig_label + " is signed by key " + key +
           ", which is not in the keyring, and fetching it failed: " + e.what());
    }
    if (!armored) return false;
    std::vector<std::string> imported;
    try {
      imported = trusted().import(*armored);
    } catch (const Error& e) {
      fail(sig_label + ": the keyservers' copy of key " + key + " cannot be read: " + e.what());
    }
    for (const auto& fingerprint : imported) remote_keys_.insert(fingerprint);
    return std::find(imported.begin(), imported.end(), key) != imported.end();
  }

  GnupgHome& trusted() {
    if (!trusted_)
      trusted_ = std::make_unique<GnupgHome>(options_.keyring_files ? public_keys_from(*options_.keyring_files)
                                                                    : trusted_public_keys());
    return *trusted_;
  }

  VerifiedSignature check(const Task& task, const Descriptor& sig) {
    const std::string data = signature_data(sig);
    const std::string sig_label = "signature object " + std::to_string(sig.id);
    VerifiedSignature verified;
    verified.signature_id = sig.id;
    std::string message;
    if (auto envelope = parse_envelope(data); envelope && envelope->payload_type == kSifMetadataPayloadType) {
      verified.format = SignatureFormat::Dsse;
      if (keys_.empty())
        fail(sig_label +
             " is a key-pair (DSSE) signature: verify it with --key PUBLIC_KEY.pem or --certificate CERTIFICATE.pem");
      std::vector<std::string> accepted = verify_envelope(*envelope, keys_);
      if (accepted.empty()) fail(sig_label + " was not made by " + key_source_ + " (no valid signature for it)");
      for (const auto& key : keys_)
        if (std::find(accepted.begin(), accepted.end(), key.ssh_fingerprint()) != accepted.end())
          verified.signers.push_back({key.ssh_fingerprint(), key.type_name() + " key", certificate_subject_});
      message = envelope->payload;
    } else if (data.find(kClearsignBegin) != std::string::npos) {
      verified.format = task.legacy ? SignatureFormat::LegacyPgp : SignatureFormat::Pgp;
      if (!keys_.empty())
        fail(sig_label + " is a PGP signature: verify it without " +
             std::string(options_.certificate ? "--certificate" : "--key") +
             ", with the signer's public key imported "
             "(capsa key import KEYFILE)");
      const std::string recorded = fingerprint_hex(sig.signature().entity);
      ClearsignedMessage checked;
      bool fetched = false;
      for (;;) {
        try {
          checked = trusted().verify_clearsigned(data);
          break;
        } catch (const UnknownKeyError& e) {
          // GnuPG names the key by the ID in the signature, often only its last 16 digits.
          const std::string key = recorded.ends_with(e.key_id()) ? recorded : e.key_id();
          if (options_.skip_untrusted) throw UntrustedSignature{key};
          if (!fetched && options_.fetch_key && key == recorded) {
            fetched = true;
            if (fetch_into_trusted(key, sig_label)) continue;
          }
          std::string why = sig_label;
          why += " is signed by key ";
          why += key;
          why += ", which is not in the keyring";
          if (fetched) why += " nor on the keyservers";
          why += " (import the signer's public key with `capsa key import KEYFILE`)";
          fail(why);
        } catch (const Error& e) {
          fail(sig_label + " is not valid: " + e.what());
        }
      }
      if (checked.fingerprint != recorded)
        fail(sig_label + ": its descriptor names key " + recorded + " but key " + checked.fingerprint + " signed it");
      verified.signers.push_back({checked.fingerprint, checked.name, "", remote_keys_.contains(checked.fingerprint)});
      message = checked.plaintext;
    } else {
      fail(sig_label + " is neither a PGP clear-signed message nor a DSSE envelope");
    }
    verified.objects = task.legacy ? check_legacy(task, sig, message) : check_metadata(task, sig, message);
    return verified;
  }

  std::vector<Descriptor> check_metadata(const Task& task, const Descriptor& sig, const std::string& message) const {
    const std::string sig_label = "signature object " + std::to_string(sig.id);
    ImageMetadata metadata;
    try {
      metadata = parse_metadata(message);
    } catch (const FormatError& e) {
      fail(sig_label + ": " + e.what());
    }
    const std::uint32_t min_id = group_min_id(image_, task.group_id);
    std::map<std::uint32_t, const ObjectDigests*> signed_objects;
    for (const auto& o : metadata.objects) signed_objects[min_id + o.relative_id] = &o;
    if (!task.subset_ok) {
      for (const auto& d : task.objects)
        if (!signed_objects.contains(d.id))
          fail(object_label(d) + " was added to group " + std::to_string(task.group_id) + " after " + sig_label +
               " signed it (object not signed)");
      for (const auto& [id, o] : signed_objects)
        if (std::none_of(task.objects.begin(), task.objects.end(), [id = id](const auto& d) { return d.id == id; }))
          fail("object " + std::to_string(id) + ", signed by " + sig_label + ", is no longer in group " +
               std::to_string(task.group_id));
    }
    if (!digest_matches(metadata.header_digest, header_integrity_record(image_.header())))
      fail("the SIF header changed since " + sig_label + " was made (header integrity compromised)");
    for (const auto& d : task.objects) {
      auto it = signed_objects.find(d.id);
      if (it == signed_objects.end()) fail(object_label(d) + " is not covered by " + sig_label);
      if (!digest_matches(it->second->descriptor_digest, descriptor_integrity_record(d, d.id - min_id)))
        fail(object_label(d) + ": its descriptor changed since " + sig_label +
             " signed it (descriptor integrity compromised)");
      if (!digest_matches_object(it->second->object_digest, image_, d))
        fail(object_label(d) + ": its data changed since " + sig_label + " signed it (object integrity compromised)");
    }
    return task.objects;
  }

  std::vector<Descriptor> check_legacy(const Task& task, const Descriptor& sig, std::string message) const {
    const std::string sig_label = "signature object " + std::to_string(sig.id);
    if (!message.starts_with(kLegacyPrefix)) fail(sig_label + " is no legacy signature (no SIFHASH)");
    message.erase(0, kLegacyPrefix.size());
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
    std::string algorithm;
    try {
      algorithm = algorithm_of(sig.signature().hash_type);
    } catch (const FormatError& e) {
      fail(sig_label + ": " + e.what());
    }
    DigestHasher hasher(algorithm);
    for (const auto& d : task.objects)
      hasher.update_from_file(image_.fd(), static_cast<std::uint64_t>(d.offset), static_cast<std::uint64_t>(d.size));
    std::string lower = message;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (hasher.finish_hex() != lower) {
      std::string what = task.is_group ? "the data of object group " + std::to_string(task.id)
                                       : object_label(task.objects.front()) + ": its data";
      fail(what + " changed since " + sig_label + " signed it (object integrity compromised)");
    }
    return task.objects;
  }

  Image image_;
  VerifyOptions options_;
  std::vector<PublicKey> keys_;
  std::string key_source_ = "the key given with --key";
  std::string certificate_subject_;
  std::unique_ptr<GnupgHome> trusted_;
  std::set<std::string> remote_keys_;  // fingerprints fetched from a keyserver
};

}  // namespace

std::string fingerprint_hex(const std::array<std::uint8_t, 20>& bytes) {
  static constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (auto b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::vector<std::string> VerificationResult::signers_of(std::uint32_t id) const {
  std::vector<std::string> out;
  for (const auto& signature : signatures)
    for (const auto& d : signature.objects)
      if (d.id == id)
        for (const auto& signer : signature.signers)
          if (std::find(out.begin(), out.end(), signer.fingerprint) == out.end()) out.push_back(signer.fingerprint);
  return out;
}

VerificationResult verify_image(const std::string& path, const VerifyOptions& options) {
  return Verifier(path, options).run();
}

}  // namespace capsa::signing
