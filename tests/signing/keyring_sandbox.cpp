#include "keyring_sandbox.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <unistd.h>

#include "signing/gnupg_home.hpp"
#include "support/process.hpp"
#include "support/test_env.hpp"

namespace capsa::test {

KeyringSandbox::KeyringSandbox() {
  std::filesystem::create_directories(dir_ / "home");
  for (const char* name : {"HOME", "CAPSA_KEYSDIR", "APPTAINER_KEYSDIR", "SINGULARITY_KEYSDIR"}) {
    const char* value = std::getenv(name);
    saved_.emplace_back(name, value ? value : std::string("\x01unset"));
  }
  ::setenv("HOME", (dir_ / "home").c_str(), 1);
  ::unsetenv("CAPSA_KEYSDIR");
  ::unsetenv("APPTAINER_KEYSDIR");
  ::unsetenv("SINGULARITY_KEYSDIR");
}

KeyringSandbox::~KeyringSandbox() {
  {
    // Stops any gpg-agent the test's keyring started.
    std::error_code ec;
    if (std::filesystem::exists(keys_directory(), ec)) {
      run_process({"gpgconf", "--homedir", keys_directory(), "--kill", "gpg-agent"});
      // The agent removes its socket as it exits: wait for that before the directory goes.
      for (int i = 0; i < 40 && std::filesystem::exists(keys_directory() + "/S.gpg-agent", ec); ++i) ::usleep(25000);
    }
  }
  for (const auto& [name, value] : saved_) {
    if (value == "\x01unset")
      ::unsetenv(name.c_str());
    else
      ::setenv(name.c_str(), value.c_str(), 1);
  }
}

void KeyringSandbox::trust_upstream_pgp_key() const {
  signing::GnupgHome home(keys_directory());
  home.import(read_file(sif_fixture("keys/pgp-public.asc")));
}

std::string KeyringSandbox::copy_fixture(const std::string& relative, const std::string& as) const {
  std::string to = dir_ / as;
  std::filesystem::copy_file(sif_fixture(relative), to, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::permissions(to, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  return to;
}

std::pair<std::string, std::string> generate_pem_key_pair(const TempDir& dir, const std::string& kind,
                                                          const std::string& name) {
  const std::string base = name.empty() ? kind : name;
  const std::string private_key = dir / (base + "-private.pem"), public_key = dir / (base + "-public.pem");
  std::vector<std::string> args = {"openssl", "genpkey", "-out", private_key};
  if (kind == "rsa") args.insert(args.end(), {"-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"});
  if (kind == "ecdsa") args.insert(args.end(), {"-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"});
  if (kind == "ed25519") args.insert(args.end(), {"-algorithm", "ED25519"});
  auto made = run_process(args);
  if (made.exit_code != 0) throw std::runtime_error("openssl genpkey " + kind + ": " + made.err);
  auto pub = run_process({"openssl", "pkey", "-in", private_key, "-pubout", "-out", public_key});
  if (pub.exit_code != 0) throw std::runtime_error("openssl pkey -pubout: " + pub.err);
  return {private_key, public_key};
}

void flip_byte(const std::string& path, long offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  if (!file) throw std::runtime_error("cannot open " + path);
  file.seekg(offset);
  char c = 0;
  file.get(c);
  file.seekp(offset);
  file.put(static_cast<char>(c ^ 0x01));
}

ProcessResult run_capsa(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv = {capsa_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, input);
}

int line_count(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace capsa::test
