// `capsa key`: the OpenPGP keyring that sign and verify use (signing/keyring.hpp), with
// Apptainer's subcommands and messages. Pass-phrases come from standard input
// (--password-stdin) or a terminal prompt, never from the command line.
#include <fcntl.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/passphrase.hpp"
#include "cli/refused_flags.hpp"
#include "keyserver/hkp_client.hpp"
#include "keyserver/index_format.hpp"
#include "keyserver/keyservers.hpp"
#include "library/remotes.hpp"
#include "signing/keyring.hpp"
#include "signing/report.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

const RefusedFlag kGlobal{"-g,--global", false, "capsa keeps no global keyring; every user has their own"};
const char* const kNoPush = "push the key once it exists with `capsa key push FINGERPRINT`";

// -d/--keysdir: as Apptainer's, the directory of the keyring to use.
void add_keysdir(CLI::App& cmd, const std::shared_ptr<std::string>& dir) {
  cmd.add_option("-d,--keysdir", *dir, "Keyring directory (default: $CAPSA_KEYSDIR or ~/.capsa/keys)");
}

void use_keysdir(const std::string& dir) {
  if (!dir.empty()) ::setenv("CAPSA_KEYSDIR", dir.c_str(), 1);
}

std::string read_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read the key file: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The key to export or the one a command means: by fingerprint, or the only one there is.
std::string choose_key(const std::vector<signing::PgpKey>& keys, const std::string& fingerprint, bool secret) {
  const std::string kind = secret ? "secret" : "public";
  if (keys.empty()) throw Error("the keyring holds no " + kind + " key");
  if (!fingerprint.empty()) {
    for (const auto& key : keys)
      if (key.fingerprint == fingerprint || key.fingerprint.ends_with(fingerprint)) return key.fingerprint;
    throw Error("no " + kind + " key " + fingerprint + " in the keyring (see `capsa key list" +
                (secret ? " --secret" : "") + "`)");
  }
  if (keys.size() > 1)
    throw Error("the keyring holds " + std::to_string(keys.size()) + " " + kind +
                " keys: choose one with --fingerprint (see `capsa key list" + (secret ? " --secret" : "") + "`)");
  return keys.front().fingerprint;
}

void write_key_file(const std::string& path, const std::string& data, bool secret) {
  UniqueFd fd = open_file(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, secret ? 0600 : 0644);
  write_all(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(data.data()), data.size()));
}

void add_newpair(CLI::App& key) {
  struct Flags {
    std::string name, email, comment;
    unsigned int bits = 4096;
    bool password_stdin = false;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("newpair", "Create a new OpenPGP key pair in the keyring");
  cmd->add_option("-N,--name", f->name, "Key owner's name")->required();
  cmd->add_option("-E,--email", f->email, "Key owner's e-mail address")->required();
  cmd->add_option("-C,--comment", f->comment, "Key comment");
  cmd->add_option("-b,--bit-length", f->bits, "RSA key length in bits (default 4096)")->check(CLI::Range(2048, 4096));
  cmd->add_flag("--password-stdin", f->password_stdin,
                "Read the pass-phrase protecting the secret key from standard input (empty: none)");
  add_keysdir(*cmd, dir);
  add_refused_flags(*cmd, {{"-P,--password", true,
                            "a pass-phrase on the command line is visible to every user; use --password-stdin"},
                           {"-U,--push", false, kNoPush}});
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    std::string passphrase;
    if (f->password_stdin) {
      passphrase = passphrase_from_stdin();
    } else {
      auto asked = passphrase_source({}, "Enter a passphrase to protect the key (empty for none) : ")();
      if (!asked) throw Error("no terminal to ask for the key's pass-phrase: give it with --password-stdin");
      passphrase = *asked;
    }
    std::string user_id = f->name;
    if (!f->comment.empty()) user_id += " (" + f->comment + ")";
    user_id += " <" + f->email + ">";
    signing::GnupgHome keyring = signing::open_user_keyring();
    const std::string fingerprint = keyring.create_key(user_id, f->bits, passphrase);
    std::fill(passphrase.begin(), passphrase.end(), '\0');
    // Printed once the key exists, so that a failure leaves no half line behind.
    std::cout << "Generating Entity and OpenPGP Key Pair... done\nKey with fingerprint " << fingerprint << " added to "
              << keyring.directory() << "\n";
  });
}

void add_list(CLI::App& key) {
  auto secret = std::make_shared<bool>(false);
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("list", "List the keys in the keyring");
  cmd->add_flag("-s,--secret", *secret, "List the secret keys instead of the public ones");
  add_keysdir(*cmd, dir);
  add_refused_flags(*cmd, {kGlobal});
  cmd->callback([secret, dir] {
    use_keysdir(*dir);
    signing::GnupgHome keyring = signing::open_user_keyring();
    std::cout << signing::key_list_report(keyring.list(*secret), *secret, keyring.directory());
  });
}

void add_import(CLI::App& key) {
  auto path = std::make_shared<std::string>();
  auto password_stdin = std::make_shared<bool>(false);
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("import", "Import OpenPGP keys (armored or binary, e.g. Apptainer's pgp-public)");
  cmd->add_option("key_file", *path, "File holding the key(s)")->required();
  cmd->add_flag("--password-stdin", *password_stdin, "Read the secret key's pass-phrase from standard input");
  add_keysdir(*cmd, dir);
  add_refused_flags(*cmd, {kGlobal, {"--new-password", false, "re-protecting an imported key is not implemented"}});
  cmd->callback([path, password_stdin, dir] {
    use_keysdir(*dir);
    const std::string data = read_key_file(*path);
    std::optional<std::string> passphrase;
    if (*password_stdin) passphrase = passphrase_from_stdin();
    signing::GnupgHome keyring = signing::open_user_keyring();
    std::vector<std::string> imported;
    try {
      imported = keyring.import(data, passphrase_source(passphrase, "Enter key passphrase : "));
    } catch (const Error& e) {
      throw Error(*path + ": " + e.what());
    }
    const auto secrets = keyring.list(true);
    for (const std::string& fingerprint : imported) {
      for (const auto& s : secrets)
        if (s.fingerprint == fingerprint)
          std::cout << "Key with fingerprint " << fingerprint << " successfully added to the private keyring\n";
      std::cout << "Key with fingerprint " << fingerprint << " successfully added to the public keyring\n";
    }
  });
}

void add_export(CLI::App& key) {
  struct Flags {
    std::string path, fingerprint;
    bool secret = false, armor = false, password_stdin = false;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("export", "Export a key from the keyring to a file");
  cmd->add_option("output_file", f->path, "File to write")->required();
  cmd->add_flag("-s,--secret", f->secret, "Export the secret key (with its public key)");
  cmd->add_flag("-a,--armor", f->armor, "ASCII-armored output");
  cmd->add_option("--fingerprint", f->fingerprint, "The key to export, when the keyring holds several");
  cmd->add_flag("--password-stdin", f->password_stdin, "Read the secret key's pass-phrase from standard input");
  add_keysdir(*cmd, dir);
  add_refused_flags(*cmd, {kGlobal});
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    signing::GnupgHome keyring = signing::open_user_keyring();
    const std::string fingerprint = choose_key(keyring.list(f->secret), f->fingerprint, f->secret);
    std::string data;
    if (f->secret) {
      std::optional<std::string> passphrase;
      if (f->password_stdin) passphrase = passphrase_from_stdin();
      data = keyring.export_secret(fingerprint, f->armor, passphrase_source(passphrase, "Enter key passphrase : "));
    } else {
      data = keyring.export_public(fingerprint, f->armor);
    }
    write_key_file(f->path, data, f->secret);
    std::fill(data.begin(), data.end(), '\0');
    std::cout << (f->secret ? "Private" : "Public") << " key with fingerprint " << fingerprint
              << " correctly exported to file: " << f->path << "\n";
  });
}

void add_remove(CLI::App& key) {
  struct Flags {
    std::string fingerprint;
    bool pub = false, secret = false, both = false;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("remove", "Remove a key from the keyring");
  cmd->add_option("fingerprint", f->fingerprint, "Fingerprint of the key (see `capsa key list`)")->required();
  auto* pub = cmd->add_flag("-p,--public", f->pub, "Remove the public key (the default; refused while a secret key exists)");
  auto* secret = cmd->add_flag("-s,--secret", f->secret, "Remove the secret key only");
  auto* both = cmd->add_flag("-b,--both", f->both, "Remove the public and the secret key");
  pub->excludes(secret)->excludes(both);
  secret->excludes(both);
  add_keysdir(*cmd, dir);
  add_refused_flags(*cmd, {kGlobal});
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    signing::GnupgHome keyring = signing::open_user_keyring();
    const std::string fingerprint = choose_key(keyring.list(false), f->fingerprint, false);
    bool has_secret = false;
    for (const auto& held : keyring.list(true)) has_secret = has_secret || held.fingerprint == fingerprint;
    if (f->secret || f->both) {
      if (!has_secret) throw Error("the keyring holds no secret key " + fingerprint);
      keyring.remove(fingerprint, f->secret);
      std::cout << "Secret key with fingerprint " << fingerprint << " removed from the keyring\n";
      if (f->secret) return;
    } else {
      if (has_secret)
        throw Error("key " + fingerprint + " has a secret key in the keyring: remove both with --both, or the secret "
                    "key first with --secret");
      keyring.remove(fingerprint, false);
    }
    std::cout << "Public key with fingerprint " << fingerprint << " removed from the keyring\n";
  });
}

// --url, else the active remote's keyservers (keyserver/keyservers.hpp).
std::vector<keyserver::Target> keyservers(const std::string& url, keyserver::Operation operation) {
  std::string warning;
  auto targets = keyserver::targets_for(
      library::Remotes::load(), url.empty() ? std::nullopt : std::optional<std::string>(url), operation, &warning);
  if (!warning.empty()) log::warning(warning);
  return targets;
}

// A fingerprint or key ID as given (0x optional): its upper-case hex digits. Error unless
// it is 8, 16 or 40 of them.
std::string key_digits(const std::string& given) {
  std::string digits = given.starts_with("0x") || given.starts_with("0X") ? given.substr(2) : given;
  for (char& c : digits) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (digits.find_first_not_of("0123456789ABCDEF") != std::string::npos ||
      (digits.size() != 8 && digits.size() != 16 && digits.size() != 40))
    throw Error("\"" + given + "\" is no key: give its fingerprint (40 hex digits) or key ID (8 or 16)");
  return digits;
}

void add_search(CLI::App& key) {
  struct Flags {
    std::string term, url;
    bool long_list = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = key.add_subcommand("search", "Search a keyserver for keys matching a name, e-mail or fingerprint");
  cmd->add_option("term", f->term, "What to look for (a fingerprint or key ID of 8+ hex digits, or words)")->required();
  cmd->add_flag("-l,--long-list", f->long_list, "Show fingerprints, algorithms, dates and status");
  cmd->add_option("-u,--url", f->url, "The keyserver to ask (default: the active remote's first)");
  cmd->callback([f] {
    std::string search = f->term;
    // As Apptainer: 8 or more upper-case hex digits are a fingerprint or key ID.
    if (search.size() >= 8 && search.find_first_not_of("0123456789ABCDEF") == std::string::npos) search = "0x" + search;
    keyserver::HkpClient client(keyservers(f->url, keyserver::Operation::kSearch));
    const std::string text = client.index(search);  // KeyNotFound says which keyserver had none
    std::cout << keyserver::format_index(keyserver::parse_index(text), f->long_list);
  });
}

void add_pull(CLI::App& key) {
  struct Flags {
    std::string fingerprint, url;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("pull", "Fetch a public key from a keyserver into the keyring");
  cmd->add_option("fingerprint", f->fingerprint, "The key's fingerprint (40 hex digits) or key ID")->required();
  cmd->add_option("-u,--url", f->url, "The keyserver to ask (default: the active remote's first)");
  add_keysdir(*cmd, dir);
  add_refused_flags(*cmd, {kGlobal});
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    const std::string digits = key_digits(f->fingerprint);
    keyserver::HkpClient client(keyservers(f->url, keyserver::Operation::kPull));
    const std::string armored = client.get("0x" + digits);
    // The keyserver's answer is checked in a throw-away home first: only the key asked
    // for reaches the keyring, whatever else the answer holds.
    signing::GnupgHome staging = signing::GnupgHome::temporary();
    try {
      staging.import(armored);
    } catch (const Error& e) {
      throw Error("keyserver " + client.answered_by() + " sent no readable key for " + digits + ": " + e.what());
    }
    std::vector<std::string> matching;
    for (const auto& held : staging.list(false))
      if (held.fingerprint.ends_with(digits)) matching.push_back(held.fingerprint);
    if (matching.empty())
      throw Error("keyserver " + client.answered_by() + " answered with another key than " + digits +
                  ": nothing imported");
    if (matching.size() > 1)
      throw Error("keyserver " + client.answered_by() + " has " + std::to_string(matching.size()) + " keys with ID " +
                  digits + ": pull it by its full fingerprint");
    signing::GnupgHome keyring = signing::open_user_keyring();
    bool held = false;
    for (const auto& k : keyring.list(false)) held = held || k.fingerprint == matching.front();
    keyring.import(staging.export_public(matching.front(), false));
    std::cout << (held ? 0 : 1) << " key(s) added to keyring of trust " << keyring.directory() << "\n";
  });
}

void add_push(CLI::App& key) {
  struct Flags {
    std::string fingerprint, url;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("push", "Send a public key of the keyring to a keyserver");
  cmd->add_option("fingerprint", f->fingerprint, "The key's fingerprint (40 hex digits) or key ID (16)")->required();
  cmd->add_option("-u,--url", f->url, "The keyserver to send it to (default: the active remote's first)");
  add_keysdir(*cmd, dir);
  add_refused_flags(*cmd, {kGlobal});
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    const std::string digits = key_digits(f->fingerprint);
    signing::GnupgHome keyring = signing::open_user_keyring();
    const std::string fingerprint = choose_key(keyring.list(false), digits, false);
    const std::string armored = keyring.export_public(fingerprint, true);
    keyserver::HkpClient client(keyservers(f->url, keyserver::Operation::kPush));
    const std::string answer = client.add(armored);
    std::cout << "public key `" << f->fingerprint << "' pushed to server successfully\n";
    if (!answer.empty()) log::info("Key server response: " + answer);
  });
}

}  // namespace

void add_key_command(CLI::App& app) {
  auto* key = app.add_subcommand("key", "Manage the OpenPGP keys used to sign and verify images");
  key->require_subcommand(1);
  key->footer(
      "capsa's keyring is a GnuPG home of its own, ${CAPSA_KEYSDIR:-~/.capsa/keys}; verify also trusts "
      "the keys in Apptainer's ~/.apptainer/keys/pgp-public. search, pull and push speak HKP to --url, else "
      "to the active remote's first keyserver (capsa keyserver list). See docs/signing.md.");
  add_newpair(*key);
  add_list(*key);
  add_import(*key);
  add_export(*key);
  add_remove(*key);
  add_search(*key);
  add_pull(*key);
  add_push(*key);
}

}  // namespace capsa::cli
