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
#include <optional>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/passphrase.hpp"
#include "keyserver/hkp_client.hpp"
#include "keyserver/index_format.hpp"
#include "keyserver/keyservers.hpp"
#include "library/remotes.hpp"
#include "signing/global_keyring.hpp"
#include "signing/keyring.hpp"
#include "signing/report.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"
#include "util/log.hpp"

namespace capsa::cli {
namespace {

// -g/--global: the administrator's public keyring (signing/global_keyring.hpp) instead of
// the user's.
void add_global(CLI::App& cmd, const std::shared_ptr<bool>& global) {
  cmd.add_flag("-g,--global", *global,
               "The administrator's global public keyring (changing it: root, or your own installation)");
}

const char* const kPublicOnly = "the global keyring holds public keys only";

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

// The pass-phrase of a new key: -P/--password as Apptainer takes it (capsa hides it from
// the process list as it starts: cli/invocation.cpp), standard input, or the terminal
// (asked twice, as Apptainer asks).
std::string new_key_passphrase(const std::optional<std::string>& given, bool from_stdin) {
  if (given) return *given;
  if (from_stdin) return passphrase_from_stdin();
  auto first = passphrase_source({}, "Enter a passphrase to protect the key (empty for none) : ")();
  if (!first) throw Error("no terminal to ask for the key's pass-phrase: give it with --password-stdin");
  if (!first->empty()) {
    auto again = passphrase_source({}, "Retype your passphrase : ")();
    if (!again || *again != *first) throw Error("the pass-phrases did not match: nothing was created");
  }
  return *first;
}

void add_newpair(CLI::App& key) {
  struct Flags {
    std::string name, email, comment;
    unsigned int bits = 4096;
    bool password_stdin = false, push = false;
    std::optional<std::string> password;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("newpair", "Create a new OpenPGP key pair in the keyring");
  cmd->add_option("-N,--name", f->name, "Key owner's name")->required();
  cmd->add_option("-E,--email", f->email, "Key owner's e-mail address")->required();
  cmd->add_option("-C,--comment", f->comment, "Key comment");
  cmd->add_option("-b,--bit-length", f->bits, "RSA key length in bits (default 4096)")->check(CLI::Range(2048, 4096));
  auto* password = cmd->add_option("-P,--password", f->password,
                                   "The pass-phrase protecting the secret key; prefer --password-stdin, which keeps "
                                   "it out of the process list");
  auto* from_stdin = cmd->add_flag("--password-stdin", f->password_stdin,
                                   "Read the pass-phrase protecting the secret key from standard input (empty: none)");
  password->excludes(from_stdin);
  cmd->add_flag("-U,--push", f->push, "Push the public key to the active remote's keyserver once it is made");
  add_keysdir(*cmd, dir);
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    std::string passphrase = new_key_passphrase(f->password, f->password_stdin);
    if (f->password) std::fill(f->password->begin(), f->password->end(), '\0');
    std::string user_id = f->name;
    if (!f->comment.empty()) user_id += " (" + f->comment + ")";
    user_id += " <" + f->email + ">";
    // The keyserver is resolved first: a bad remote configuration creates no key.
    std::optional<keyserver::HkpClient> client;
    if (f->push) client.emplace(keyservers("", keyserver::Operation::kPush));
    signing::GnupgHome keyring = signing::open_user_keyring();
    const std::string fingerprint = keyring.create_key(user_id, f->bits, passphrase);
    std::fill(passphrase.begin(), passphrase.end(), '\0');
    // Printed once the key exists, so that a failure leaves no half line behind.
    std::cout << "Generating Entity and OpenPGP Key Pair... done\nKey with fingerprint " << fingerprint << " added to "
              << keyring.directory() << "\n"
              << std::flush;
    if (!client) return;
    try {
      client->add(keyring.export_public(fingerprint, true));
    } catch (const Error& e) {
      throw Error("the key was made, but pushing it failed: " + std::string(e.what()) +
                  " (push it later with `capsa key push " + fingerprint + "`)");
    }
    std::cout << "Key successfully pushed to keystore\n";
  });
}

void add_list(CLI::App& key) {
  auto secret = std::make_shared<bool>(false);
  auto global = std::make_shared<bool>(false);
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("list", "List the keys in the keyring");
  cmd->add_flag("-s,--secret", *secret, "List the secret keys instead of the public ones");
  add_global(*cmd, global);
  add_keysdir(*cmd, dir);
  cmd->callback([secret, global, dir] {
    if (*global) {
      if (*secret) throw Error(kPublicOnly);
      signing::GlobalKeyring keyring;
      std::cout << signing::key_list_report(keyring.keys().list(false), false, keyring.path());
      return;
    }
    use_keysdir(*dir);
    signing::GnupgHome keyring = signing::open_user_keyring();
    std::cout << signing::key_list_report(keyring.list(*secret), *secret, keyring.directory());
  });
}

// --new-password: the pass-phrase the imported secret keys get instead of their own, from
// the second line of standard input (--password-stdin) or asked twice on the terminal.
std::string new_import_passphrase(const std::optional<std::string>& stdin_lines) {
  std::string next;
  if (stdin_lines) {
    const auto newline = stdin_lines->find('\n');
    if (newline == std::string::npos)
      throw Error("--new-password with --password-stdin reads two lines: the key's pass-phrase, then the new one");
    next = stdin_lines->substr(newline + 1);
    if (next.ends_with('\n')) next.pop_back();
    if (next.ends_with('\r')) next.pop_back();
  } else {
    auto first = passphrase_source({}, "Enter a new password for this key : ")();
    if (!first) throw Error("no terminal to ask for the new pass-phrase: give it with --password-stdin");
    auto again = passphrase_source({}, "Retype your passphrase : ")();
    if (!again || *again != *first) throw Error("the new pass-phrases did not match: nothing was imported");
    next = *first;
  }
  if (next.empty()) throw Error("--new-password: the new pass-phrase is empty");
  return next;
}

void import_global(const std::string& path, const std::string& data) {
  signing::GlobalKeyring keyring;
  keyring.require_write_access("key import");
  std::vector<std::string> imported;
  try {
    imported = keyring.keys().import_public(data);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  keyring.save();
  for (const std::string& fingerprint : imported)
    std::cout << "Key with fingerprint " << fingerprint << " successfully added to the global keyring "
              << keyring.path() << "\n";
}

void add_import(CLI::App& key) {
  struct Flags {
    std::string path, dir;
    bool password_stdin = false, global = false, new_password = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = key.add_subcommand("import", "Import OpenPGP keys (armored or binary, e.g. Apptainer's pgp-public)");
  cmd->add_option("key_file", f->path, "File holding the key(s)")->required();
  cmd->add_flag("--password-stdin", f->password_stdin,
                "Read the secret key's pass-phrase from standard input (with --new-password: then the new one)");
  auto* renew = cmd->add_flag("--new-password", f->new_password,
                              "Protect the imported secret key with a new pass-phrase (asked, or stdin's 2nd line)");
  auto* global = cmd->add_flag("-g,--global", f->global,
                               "Into the administrator's global public keyring (root, or your own installation)");
  renew->excludes(global);
  cmd->add_option("-d,--keysdir", f->dir, "Keyring directory (default: $CAPSA_KEYSDIR or ~/.capsa/keys)");
  cmd->callback([f] {
    const std::string data = read_key_file(f->path);
    if (f->global) return import_global(f->path, data);
    use_keysdir(f->dir);
    std::optional<std::string> passphrase;
    std::optional<std::string> stdin_text;
    if (f->password_stdin) {
      stdin_text = passphrase_from_stdin();
      passphrase = *stdin_text;
      if (f->new_password) {
        passphrase = stdin_text->substr(0, stdin_text->find('\n'));
        if (passphrase->ends_with('\r')) passphrase->pop_back();
      }
    }
    std::string next;
    if (f->new_password) {
      // GnuPG stores an imported key as it is, without asking; setting the new pass-phrase
      // needs the present one (empty: the key has none).
      if (!passphrase) {
        passphrase = passphrase_source({}, "Enter your old password (empty for none) : ")();
        if (!passphrase) throw Error("no terminal to ask for the key's pass-phrases: give them with --password-stdin");
      }
      next = new_import_passphrase(stdin_text);
    }
    signing::GnupgHome keyring = signing::open_user_keyring();
    std::vector<std::string> imported;
    try {
      imported = keyring.import(data, passphrase_source(passphrase, "Enter key passphrase : "));
    } catch (const Error& e) {
      throw Error(f->path + ": " + e.what());
    }
    const auto secrets = keyring.list(true);
    bool renewed = false;
    for (const std::string& fingerprint : imported) {
      for (const auto& s : secrets) {
        if (s.fingerprint != fingerprint) continue;
        if (f->new_password) {
          keyring.change_passphrase(fingerprint, passphrase.value_or(""), next);
          renewed = true;
        }
        std::cout << "Key with fingerprint " << fingerprint << " successfully added to the private keyring\n";
      }
      std::cout << "Key with fingerprint " << fingerprint << " successfully added to the public keyring\n";
    }
    if (f->new_password && !renewed) log::warning("--new-password: " + f->path + " held no secret key to protect");
  });
}

void add_export(CLI::App& key) {
  struct Flags {
    std::string path, fingerprint;
    bool secret = false, armor = false, password_stdin = false, global = false;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("export", "Export a key from the keyring to a file");
  cmd->add_option("output_file", f->path, "File to write")->required();
  cmd->add_flag("-s,--secret", f->secret, "Export the secret key (with its public key)");
  cmd->add_flag("-a,--armor", f->armor, "ASCII-armored output");
  cmd->add_option("--fingerprint", f->fingerprint, "The key to export, when the keyring holds several");
  cmd->add_flag("--password-stdin", f->password_stdin, "Read the secret key's pass-phrase from standard input");
  cmd->add_flag("-g,--global", f->global, "From the administrator's global public keyring");
  add_keysdir(*cmd, dir);
  cmd->callback([f, dir] {
    if (f->global) {
      if (f->secret) throw Error(kPublicOnly);
      signing::GlobalKeyring keyring;
      const std::string fingerprint = choose_key(keyring.keys().list(false), f->fingerprint, false);
      write_key_file(f->path, keyring.keys().export_public(fingerprint, f->armor), false);
      std::cout << "Public key with fingerprint " << fingerprint << " correctly exported to file: " << f->path << "\n";
      return;
    }
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

void remove_global(const std::string& given) {
  signing::GlobalKeyring keyring;
  keyring.require_write_access("key remove");
  const std::string fingerprint = choose_key(keyring.keys().list(false), given, false);
  keyring.keys().remove(fingerprint, false);
  keyring.save();
  std::cout << "Public key with fingerprint " << fingerprint << " removed from the global keyring " << keyring.path()
            << "\n";
}

void add_remove(CLI::App& key) {
  struct Flags {
    std::string fingerprint;
    bool pub = false, secret = false, both = false, global = false;
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
  add_global(*cmd, std::shared_ptr<bool>(f, &f->global));
  add_keysdir(*cmd, dir);
  cmd->callback([f, dir] {
    if (f->global) {
      if (f->secret || f->both) throw Error(kPublicOnly);
      return remove_global(f->fingerprint);
    }
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
    bool global = false;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("pull", "Fetch a public key from a keyserver into the keyring");
  cmd->add_option("fingerprint", f->fingerprint, "The key's fingerprint (40 hex digits) or key ID")->required();
  cmd->add_option("-u,--url", f->url, "The keyserver to ask (default: the active remote's first)");
  add_global(*cmd, std::shared_ptr<bool>(f, &f->global));
  add_keysdir(*cmd, dir);
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    // Before the keyserver is asked: a user who may not change the keyring learns it first.
    std::optional<signing::GlobalKeyring> global;
    if (f->global) {
      global.emplace();
      global->require_write_access("key pull");
    }
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
    const std::string public_key = staging.export_public(matching.front(), false);
    auto held_in = [&matching](const signing::GnupgHome& keyring) {
      bool held = false;
      for (const auto& k : keyring.list(false)) held = held || k.fingerprint == matching.front();
      return held;
    };
    if (global) {
      const bool held = held_in(global->keys());
      global->keys().import_public(public_key);
      global->save();
      std::cout << (held ? 0 : 1) << " key(s) added to keyring of trust " << global->path() << "\n";
      return;
    }
    signing::GnupgHome keyring = signing::open_user_keyring();
    const bool held = held_in(keyring);
    keyring.import(public_key);
    std::cout << (held ? 0 : 1) << " key(s) added to keyring of trust " << keyring.directory() << "\n";
  });
}

void add_push(CLI::App& key) {
  struct Flags {
    std::string fingerprint, url;
    bool global = false;
  };
  auto f = std::make_shared<Flags>();
  auto dir = std::make_shared<std::string>();
  auto* cmd = key.add_subcommand("push", "Send a public key of the keyring to a keyserver");
  cmd->add_option("fingerprint", f->fingerprint, "The key's fingerprint (40 hex digits) or key ID (16)")->required();
  cmd->add_option("-u,--url", f->url, "The keyserver to send it to (default: the active remote's first)");
  add_global(*cmd, std::shared_ptr<bool>(f, &f->global));
  add_keysdir(*cmd, dir);
  cmd->callback([f, dir] {
    use_keysdir(*dir);
    const std::string digits = key_digits(f->fingerprint);
    std::string armored;
    if (f->global) {
      signing::GlobalKeyring keyring;
      armored = keyring.keys().export_public(choose_key(keyring.keys().list(false), digits, false), true);
    } else {
      signing::GnupgHome keyring = signing::open_user_keyring();
      armored = keyring.export_public(choose_key(keyring.list(false), digits, false), true);
    }
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
      "the keys in Apptainer's ~/.apptainer/keys/pgp-public and the administrator's global keyring "
      "(PREFIX/etc/capsa/global-pgp-public, managed with --global). search, pull and push speak HKP to --url, else "
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
