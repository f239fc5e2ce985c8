#include "signing/gnupg_home.hpp"

#include <gpgme.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "util/error.hpp"
#include "util/run_program.hpp"

namespace capsa::signing {
namespace {

struct FreeContext {
  void operator()(gpgme_ctx_t ctx) const { gpgme_release(ctx); }
};
struct FreeData {
  void operator()(gpgme_data_t data) const { gpgme_data_release(data); }
};
struct FreeKeyRef {
  void operator()(gpgme_key_t key) const { gpgme_key_unref(key); }
};
using Context = std::unique_ptr<gpgme_context, FreeContext>;
using Data = std::unique_ptr<gpgme_data, FreeData>;
using Key = std::unique_ptr<_gpgme_key, FreeKeyRef>;

std::string message_of(gpgme_error_t err) { return gpgme_strerror(err); }

void check(gpgme_error_t err, const std::string& what) {
  if (gpg_err_code(err) != GPG_ERR_NO_ERROR) throw Error(what + ": " + message_of(err));
}

void initialise_gpgme() {
  static std::once_flag once;
  std::call_once(once, [] {
    gpgme_check_version(nullptr);
    if (gpg_err_code(gpgme_engine_check_version(GPGME_PROTOCOL_OpenPGP)) != GPG_ERR_NO_ERROR)
      throw Error("GnuPG (gpg) is not installed; capsa needs it for OpenPGP signatures (apt-get install gnupg)");
  });
}

Data new_data() {
  gpgme_data_t data = nullptr;
  check(gpgme_data_new(&data), "GPGME");
  return Data(data);
}

Data data_from(std::string_view bytes) {
  gpgme_data_t data = nullptr;
  check(gpgme_data_new_from_mem(&data, bytes.data(), bytes.size(), 1), "GPGME");
  return Data(data);
}

std::string contents_of(gpgme_data_t data) {
  std::size_t length = 0;
  char* raw = gpgme_data_release_and_get_mem(data, &length);
  std::string out(raw ? raw : "", length);
  if (raw) {
    // Secret key material may pass through here: wipe it before it is freed.
    std::fill(raw, raw + length, '\0');
    gpgme_free(raw);
  }
  return out;
}

// Feeds a pass-phrase to gpg through the loopback pinentry.
gpgme_error_t passphrase_callback(void* hook, const char*, const char*, int previous_was_bad, int fd) {
  auto* source = static_cast<const PassphraseSource*>(hook);
  if (previous_was_bad || source == nullptr || !*source) return gpg_error(GPG_ERR_BAD_PASSPHRASE);
  std::optional<std::string> text = (*source)();
  if (!text) return gpg_error(GPG_ERR_NO_PASSPHRASE);
  std::string line = *text + "\n";
  const bool written = gpgme_io_writen(fd, line.data(), line.size()) == 0;
  std::fill(line.begin(), line.end(), '\0');
  return written ? 0 : gpg_error(GPG_ERR_CANCELED);
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

PgpKey describe(gpgme_key_t key) {
  PgpKey out;
  if (key->subkeys != nullptr) {
    out.fingerprint = upper(key->subkeys->fpr ? key->subkeys->fpr : "");
    out.created = key->subkeys->timestamp;
    out.bits = key->subkeys->length;
    const char* algo = gpgme_pubkey_algo_name(key->subkeys->pubkey_algo);
    out.algorithm = algo ? algo : "unknown";
  }
  if (key->uids != nullptr) {
    out.user_id = key->uids->uid ? key->uids->uid : "";
    out.name = key->uids->name ? key->uids->name : "";
    out.comment = key->uids->comment ? key->uids->comment : "";
    out.email = key->uids->email ? key->uids->email : "";
  }
  out.has_secret = key->secret != 0;
  return out;
}

}  // namespace

GnupgHome::GnupgHome(std::string directory) : directory_(std::move(directory)) {
  initialise_gpgme();
  std::error_code ec;
  std::filesystem::create_directories(directory_, ec);
  if (ec) throw Error(directory_ + ": cannot create the keyring directory: " + ec.message());
  ::chmod(directory_.c_str(), 0700);
  // SIF signatures record the hash type SHA-256; make gpg sign with it whatever the key prefers.
  const std::string conf = directory_ + "/gpg.conf";
  if (!std::filesystem::exists(conf)) std::ofstream(conf) << "digest-algo SHA256\n";
}

GnupgHome GnupgHome::temporary() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/capsa-gnupg-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw_errno("cannot create a temporary GnuPG home in " + pattern);
  // It only ever holds public keys: no gpg-agent is needed, so none is started.
  std::ofstream(pattern + "/gpg.conf") << "digest-algo SHA256\nno-autostart\n";
  GnupgHome home(pattern);
  home.temporary_ = true;
  return home;
}

GnupgHome::GnupgHome(GnupgHome&& other) noexcept
    : directory_(std::move(other.directory_)), temporary_(other.temporary_), agent_used_(other.agent_used_) {
  other.directory_.clear();
  other.temporary_ = false;
  other.agent_used_ = false;
}

GnupgHome::~GnupgHome() {
  if (directory_.empty()) return;
  if (agent_used_ || temporary_) {
    try {
      const char* gpgconf = gpgme_get_dirinfo("gpgconf-name");
      Command command{{gpgconf ? gpgconf : "gpgconf", "--homedir", directory_, "--kill", "gpg-agent"}};
      run_captured(command, "");
    } catch (...) {  // NOLINT(bugprone-empty-catch): nothing to do if it cannot be stopped
    }
  }
  if (temporary_) {
    // An agent that is still exiting may remove its sockets while the tree is walked.
    for (int attempt = 0; attempt < 20; ++attempt) {
      std::error_code ec;
      std::filesystem::remove_all(directory_, ec);
      if (!ec && !std::filesystem::exists(directory_, ec)) break;
      ::usleep(50000);
    }
  }
}

namespace {

Context open_context(const std::string& home, const PassphraseSource* passphrase = nullptr) {
  gpgme_ctx_t raw = nullptr;
  check(gpgme_new(&raw), "GPGME");
  Context ctx(raw);
  check(gpgme_ctx_set_engine_info(ctx.get(), GPGME_PROTOCOL_OpenPGP, nullptr, home.c_str()), "GPGME");
  gpgme_set_offline(ctx.get(), 1);
  if (passphrase != nullptr) {
    check(gpgme_set_pinentry_mode(ctx.get(), GPGME_PINENTRY_MODE_LOOPBACK), "GPGME");
    gpgme_set_passphrase_cb(ctx.get(), passphrase_callback, const_cast<PassphraseSource*>(passphrase));
  }
  return ctx;
}

Key find_key(gpgme_ctx_t ctx, const std::string& fingerprint, bool secret) {
  gpgme_key_t key = nullptr;
  gpgme_error_t err = gpgme_get_key(ctx, fingerprint.c_str(), &key, secret ? 1 : 0);
  if (gpg_err_code(err) == GPG_ERR_EOF || key == nullptr)
    throw Error("no " + std::string(secret ? "secret" : "public") + " key " + fingerprint +
                " in the keyring (see `capsa key list" + (secret ? " --secret" : "") + "`)");
  check(err, "looking up key " + fingerprint);
  return Key(key);
}

}  // namespace

std::vector<PgpKey> GnupgHome::list(bool secret) const {
  Context ctx = open_context(directory_);
  check(gpgme_op_keylist_start(ctx.get(), nullptr, secret ? 1 : 0), "listing keys");
  std::vector<PgpKey> keys;
  for (;;) {
    gpgme_key_t key = nullptr;
    gpgme_error_t err = gpgme_op_keylist_next(ctx.get(), &key);
    if (gpg_err_code(err) == GPG_ERR_EOF) break;
    check(err, "listing keys");
    keys.push_back(describe(key));
    gpgme_key_unref(key);
  }
  if (secret) agent_used_ = true;
  return keys;
}

std::vector<std::string> GnupgHome::import(std::string_view data, const PassphraseSource& passphrase) {
  return import_keys(data, passphrase, true);
}

std::vector<std::string> GnupgHome::import_public(std::string_view data) { return import_keys(data, {}, false); }

std::vector<std::string> GnupgHome::import_keys(std::string_view data, const PassphraseSource& passphrase,
                                                bool secret_allowed) {
  Context ctx = open_context(directory_, &passphrase);
  agent_used_ = true;
  Data in = data_from(data);
  check(gpgme_op_import(ctx.get(), in.get()), "importing keys");
  gpgme_import_result_t result = gpgme_op_import_result(ctx.get());
  // Before the per-key results: a secret key that could not be stored fails there too.
  if (!secret_allowed && result != nullptr && result->secret_read > 0)
    throw Error("it holds a secret key, and this keyring holds public keys only (export the public key alone)");
  std::vector<std::string> fingerprints;
  for (gpgme_import_status_t status = result ? result->imports : nullptr; status; status = status->next) {
    if (gpg_err_code(status->result) != GPG_ERR_NO_ERROR)
      throw Error("importing key " + std::string(status->fpr ? status->fpr : "") + ": " + message_of(status->result));
    if (status->fpr) {
      std::string fpr = upper(status->fpr);
      if (std::find(fingerprints.begin(), fingerprints.end(), fpr) == fingerprints.end()) fingerprints.push_back(fpr);
    }
  }
  if (fingerprints.empty()) throw Error("no OpenPGP key found (expected an armored or binary key file)");
  return fingerprints;
}

std::string GnupgHome::export_public(const std::string& fingerprint, bool armor) const {
  Context ctx = open_context(directory_);
  gpgme_set_armor(ctx.get(), armor ? 1 : 0);
  Data out = new_data();
  check(gpgme_op_export(ctx.get(), fingerprint.empty() ? nullptr : fingerprint.c_str(), 0, out.get()),
        "exporting keys");
  return contents_of(out.release());
}

std::string GnupgHome::export_secret(const std::string& fingerprint, bool armor, const PassphraseSource& passphrase) {
  Context ctx = open_context(directory_, &passphrase);
  agent_used_ = true;
  find_key(ctx.get(), fingerprint, true);
  gpgme_set_armor(ctx.get(), armor ? 1 : 0);
  Data out = new_data();
  gpgme_error_t err = gpgme_op_export(ctx.get(), fingerprint.c_str(), GPGME_EXPORT_MODE_SECRET, out.get());
  if (gpg_err_code(err) == GPG_ERR_BAD_PASSPHRASE || gpg_err_code(err) == GPG_ERR_NO_PASSPHRASE)
    throw Error("exporting secret key " + fingerprint +
                ": wrong or missing pass-phrase (give it with --password-stdin)");
  check(err, "exporting secret key " + fingerprint);
  std::string text = contents_of(out.release());
  if (text.empty())
    throw Error("exporting secret key " + fingerprint + ": GnuPG returned nothing (wrong pass-phrase?)");
  return text;
}

void GnupgHome::remove(const std::string& fingerprint, bool secret_only) {
  PassphraseSource none;
  Context ctx = open_context(directory_, &none);
  agent_used_ = true;
  Key key = find_key(ctx.get(), fingerprint, false);
  std::string keep_public;
  if (secret_only) {
    find_key(ctx.get(), fingerprint, true);
    keep_public = export_public(fingerprint, false);
  }
  check(gpgme_op_delete_ext(ctx.get(), key.get(), GPGME_DELETE_ALLOW_SECRET | GPGME_DELETE_FORCE),
        "removing key " + fingerprint);
  // GPGME deletes a secret key only with its public key: put the public key back.
  if (secret_only) import(keep_public);
}

std::string GnupgHome::create_key(const std::string& user_id, unsigned int bits, const std::string& passphrase) {
  PassphraseSource source = [&passphrase]() -> std::optional<std::string> { return passphrase; };
  Context ctx = open_context(directory_, &source);
  agent_used_ = true;
  unsigned int flags = GPGME_CREATE_NOEXPIRE | GPGME_CREATE_FORCE;
  if (passphrase.empty()) flags |= GPGME_CREATE_NOPASSWD;
  const std::string algorithm = "rsa" + std::to_string(bits);
  check(gpgme_op_createkey(ctx.get(), user_id.c_str(), algorithm.c_str(), 0, 0, nullptr, flags),
        "generating a key pair");
  gpgme_genkey_result_t result = gpgme_op_genkey_result(ctx.get());
  if (result == nullptr || result->fpr == nullptr) throw Error("generating a key pair: GnuPG gave no fingerprint");
  return upper(result->fpr);
}

void GnupgHome::change_passphrase(const std::string& fingerprint, const std::string& current, const std::string& next) {
  // gpg-agent asks (through the loopback pinentry, with no prompt text to tell them apart)
  // for the current pass-phrase of a protected key, then for the new one; for a key with
  // none, only for the new one. Returns how many it asked for.
  auto passwd = [&](const std::vector<std::string>& answers) {
    std::size_t asked = 0;
    PassphraseSource source = [&answers, &asked]() -> std::optional<std::string> {
      if (asked >= answers.size()) return std::nullopt;
      return answers[asked++];
    };
    Context ctx = open_context(directory_, &source);
    agent_used_ = true;
    Key key = find_key(ctx.get(), fingerprint, true);
    gpgme_error_t err = gpgme_op_passwd(ctx.get(), key.get(), 0);
    const auto code = gpg_err_code(err);
    if (code == GPG_ERR_BAD_PASSPHRASE || code == GPG_ERR_NO_PASSPHRASE || code == GPG_ERR_CANCELED)
      throw Error("setting a new pass-phrase on key " + fingerprint + ": the current pass-phrase is wrong");
    check(err, "setting a new pass-phrase on key " + fingerprint);
    return asked;
  };
  if (current.empty()) {
    passwd({next});
    return;
  }
  // Asked once: the key had no pass-phrase and now has `current`; once more sets `next`.
  if (passwd({current, next}) == 1) passwd({current, next});
}

std::string GnupgHome::clearsign(const std::string& fingerprint, std::string_view text,
                                 const PassphraseSource& passphrase) {
  Context ctx = open_context(directory_, &passphrase);
  agent_used_ = true;
  Key key = find_key(ctx.get(), fingerprint, true);
  check(gpgme_signers_add(ctx.get(), key.get()), "choosing the signing key");
  gpgme_set_textmode(ctx.get(), 0);
  Data in = data_from(text);
  Data out = new_data();
  gpgme_error_t err = gpgme_op_sign(ctx.get(), in.get(), out.get(), GPGME_SIG_MODE_CLEAR);
  const auto code = gpg_err_code(err);
  if (code == GPG_ERR_BAD_PASSPHRASE || code == GPG_ERR_NO_PASSPHRASE || code == GPG_ERR_CANCELED)
    throw Error("signing with key " + fingerprint +
                ": the secret key needs its pass-phrase (give it with --password-stdin; a wrong one fails too)");
  check(err, "signing with key " + fingerprint);
  return contents_of(out.release());
}

ClearsignedMessage GnupgHome::verify_clearsigned(std::string_view text) const {
  Context ctx = open_context(directory_);
  Data in = data_from(text);
  Data plain = new_data();
  gpgme_error_t err = gpgme_op_verify(ctx.get(), in.get(), nullptr, plain.get());
  if (gpg_err_code(err) != GPG_ERR_NO_ERROR) throw Error("not a valid clear-signed message: " + message_of(err));
  gpgme_verify_result_t result = gpgme_op_verify_result(ctx.get());
  gpgme_signature_t sig = result ? result->signatures : nullptr;
  if (sig == nullptr) throw Error("the clear-signed message holds no signature");
  for (gpgme_signature_t s = sig; s; s = s->next) {
    const std::string id = upper(s->fpr ? s->fpr : "");
    if (gpg_err_code(s->status) == GPG_ERR_NO_PUBKEY)
      throw UnknownKeyError("signed by key " + id + ", which is not in the keyring", id);
    if (gpg_err_code(s->status) != GPG_ERR_NO_ERROR)
      throw Error("bad PGP signature by key " + id + ": " + message_of(s->status));
  }
  ClearsignedMessage message;
  Key key = find_key(ctx.get(), sig->fpr ? sig->fpr : "", false);
  const PgpKey described = describe(key.get());
  message.fingerprint = described.fingerprint;
  message.name = described.name;
  message.plaintext = contents_of(plain.release());
  return message;
}

}  // namespace capsa::signing
