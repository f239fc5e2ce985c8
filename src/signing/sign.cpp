#include "signing/sign.hpp"

#include <algorithm>
#include <set>

#include "sif/image.hpp"
#include "sif/writer.hpp"
#include "signing/dsse.hpp"
#include "signing/integrity_metadata.hpp"
#include "signing/keyring.hpp"
#include "signing/pem_key.hpp"
#include "util/error.hpp"

namespace capsa::signing {
namespace {

struct GroupToSign {
  std::uint32_t group_id = 0;
  std::vector<sif::Descriptor> objects;
};

std::vector<GroupToSign> what_to_sign(const sif::Image& image, const SignOptions& options) {
  const std::string& path = image.path();
  if (options.object_id) {
    for (const auto& d : image.objects()) {
      if (d.id != *options.object_id) continue;
      if (d.group_id() == 0)
        throw Error(path + ": object " + std::to_string(d.id) +
                    " is in no object group, and SIF signatures cover groups");
      return {{d.group_id(), {d}}};
    }
    throw Error(path + ": there is no object " + std::to_string(*options.object_id) + " (see `capsa sif list`)");
  }
  std::set<std::uint32_t> groups;
  if (options.group_id) {
    groups.insert(*options.group_id);
  } else {
    for (const auto& d : image.objects())
      if (d.group_id() != 0) groups.insert(d.group_id());
    if (groups.empty()) throw Error(path + ": the image has no object groups, so there is nothing to sign");
  }
  std::vector<GroupToSign> out;
  for (std::uint32_t group : groups) {
    GroupToSign g{group, group_objects(image, group)};
    if (g.objects.empty())
      throw Error(path + ": there is no object group " + std::to_string(group) + " (see `capsa sif list`)");
    out.push_back(g);
  }
  return out;
}

std::array<std::uint8_t, 20> fingerprint_bytes(const std::string& hex) {
  std::array<std::uint8_t, 20> out{};
  if (hex.size() != 40) throw Error("key " + hex + " has no 20-byte (version 4) fingerprint, which SIF records");
  for (std::size_t i = 0; i < 20; ++i) out[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

std::string choose_secret_key(const GnupgHome& keyring, const SignOptions& options) {
  std::vector<PgpKey> keys = keyring.list(true);
  if (keys.empty())
    throw Error("no secret key in " + keyring.directory() +
                ": create one with `capsa key newpair` or import one with `capsa key import`, or sign with --key");
  if (options.key_index) {
    if (*options.key_index >= keys.size())
      throw Error("--keyidx " + std::to_string(*options.key_index) + ": the keyring holds " +
                  std::to_string(keys.size()) + " secret key(s), numbered from 0 (see `capsa key list --secret`)");
    return keys[*options.key_index].fingerprint;
  }
  if (keys.size() > 1)
    throw Error("the keyring holds " + std::to_string(keys.size()) +
                " secret keys: choose one with --keyidx N (see `capsa key list --secret`)");
  return keys.front().fingerprint;
}

}  // namespace

SignResult sign_image(const std::string& path, const SignOptions& options) {
  SignResult result;
  std::vector<sif::ObjectInput> inputs;
  {
    sif::Image image = sif::Image::open(path);
    std::vector<GroupToSign> groups = what_to_sign(image, options);
    std::optional<PrivateKey> private_key;
    std::optional<GnupgHome> keyring;
    std::array<std::uint8_t, 20> entity{};
    if (!options.private_key_file.empty()) {
      private_key = PrivateKey::load_pem_file(options.private_key_file, options.key_passphrase);
      result.signer = private_key->public_key().ssh_fingerprint();
    } else {
      keyring.emplace(open_user_keyring());
      result.signer = choose_secret_key(*keyring, options);
      entity = fingerprint_bytes(result.signer);
    }
    const auto free_slots =
        std::count_if(image.slots().begin(), image.slots().end(), [](const auto& d) { return !d.used; });
    if (static_cast<std::size_t>(free_slots) < groups.size())
      throw Error(path + ": " + std::to_string(groups.size()) + " signature(s) to add but only " +
                  std::to_string(free_slots) + " free descriptor slot(s); nothing was signed");
    for (const auto& group : groups) {
      const std::string metadata = to_json(compute_metadata(image, group.group_id, group.objects));
      std::string signature;
      if (private_key) {
        signature = serialize_envelope(sign_envelope(kSifMetadataPayloadType, metadata, {*private_key}));
      } else {
        signature = keyring->clearsign(result.signer, metadata, options.pgp_passphrase);
      }
      sif::ObjectInput input;
      input.type = sif::DataType::Signature;
      input.data = signature;
      input.group_id = 0;  // signatures belong to no group, so that they are never signed themselves
      input.linked_id = group.group_id;
      input.link_is_group = true;
      sif::Descriptor meta;
      meta.set_signature(sif::HashType::Sha256, entity);
      input.extra = meta.extra;
      input.time = options.time;
      inputs.push_back(input);
    }
  }
  // Every signature is made before the first is added: a failure leaves the image as it was.
  for (const auto& input : inputs) result.signature_ids.push_back(sif::add_object(path, input, options.time));
  return result;
}

}  // namespace capsa::signing
