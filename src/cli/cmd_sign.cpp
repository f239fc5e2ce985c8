// `capsa sign`: adds signatures to a SIF image (signing/sign.hpp), as `apptainer sign`.
#include <memory>

#include "cli/commands.hpp"
#include "cli/passphrase.hpp"
#include "signing/sign.hpp"
#include "util/error.hpp"
#include "util/log.hpp"

namespace capsa::cli {

void add_sign_command(CLI::App& app) {
  struct Flags {
    std::string image;
    std::string key;
    std::size_t key_index = 0;
    std::uint32_t group_id = 0;
    std::uint32_t sif_id = 0;
    bool all = false;
    bool password_stdin = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("sign", "Add signatures to a SIF image");
  cmd->add_option("image", f->image, "SIF image to sign")->required();
  auto* key = cmd->add_option("--key", f->key, "Sign with this PEM private key (RSA, ECDSA, Ed25519): a DSSE signature")
                  ->envname("APPTAINER_SIGN_KEY");
  auto* index = cmd->add_option("-k,--keyidx", f->key_index,
                                "Sign with this OpenPGP secret key (its index in `capsa key list --secret`)");
  auto* group = cmd->add_option("-g,--group-id,--groupid", f->group_id, "Sign the objects of this group only");
  auto* object = cmd->add_option("-i,--sif-id,--id", f->sif_id, "Sign this object only");
  cmd->add_flag("-a,--all", f->all, "Sign every object group (what sign does anyway)");
  cmd->add_flag("--password-stdin", f->password_stdin,
                "Read the key's pass-phrase from standard input (never from the command line)");
  key->excludes(index);
  group->excludes(object);
  cmd->footer(
      "Without --key the image is signed with an OpenPGP key from capsa's keyring (capsa key newpair / import) "
      "in a clear-signed message; with --key, in a DSSE envelope. One Signature object is added per object group, "
      "in Apptainer's current format. See docs/signing.md.");
  cmd->callback([f, index, group, object] {
    signing::SignOptions options;
    std::optional<std::string> passphrase;
    if (f->password_stdin) passphrase = passphrase_from_stdin();
    options.private_key_file = f->key;
    options.key_passphrase = passphrase;
    options.pgp_passphrase = passphrase_source(passphrase, "Enter key passphrase : ");
    if (index->count() > 0) options.key_index = f->key_index;
    if (group->count() > 0) {
      if (f->group_id == 0) throw Error("--group-id: groups are numbered from 1");
      options.group_id = f->group_id;
    }
    if (object->count() > 0) {
      if (f->sif_id == 0) throw Error("--sif-id: objects are numbered from 1");
      options.object_id = f->sif_id;
    }
    options.time = now_for_images();
    if (f->key.empty()) {
      log::verbose("Signing image with PGP key material");
    } else {
      log::verbose("Signing image with key material from '" + f->key + "'");
    }
    signing::sign_image(f->image, options);
    log::info("Signature created and applied to image '" + f->image + "'");
  });
}

}  // namespace capsa::cli
