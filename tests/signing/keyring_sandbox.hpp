#pragma once
// A private world for a signing test: HOME, capsa's keyring and Apptainer's keyring all
// point into a fresh temporary directory (set in this process's environment, which the
// CLI inherits), so that no test sees or changes the keys of whoever runs the suite.
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::test {

class KeyringSandbox {
 public:
  KeyringSandbox();
  ~KeyringSandbox();
  KeyringSandbox(const KeyringSandbox&) = delete;
  KeyringSandbox& operator=(const KeyringSandbox&) = delete;

  const TempDir& dir() const { return dir_; }
  std::string keys_directory() const { return dir_ / "home/.capsa/keys"; }
  // Imports the upstream fixtures' public OpenPGP key into capsa's keyring.
  void trust_upstream_pgp_key() const;
  // A copy of an upstream fixture (images/NAME) that the test may change.
  std::string copy_fixture(const std::string& relative, const std::string& as) const;

 private:
  TempDir dir_;
  std::vector<std::pair<std::string, std::string>> saved_;
};

// The fixtures' OpenPGP key ("Unit Test <unit@test.com>").
inline constexpr const char* kUpstreamPgpFingerprint = "12045C8C0B1004D058DE4BEDA20C27EE7FF7BA84";

// Generates a PEM key pair with openssl(1) into `dir`: kind "rsa", "ecdsa" or "ed25519";
// files NAME-private.pem and NAME-public.pem (NAME defaults to the kind).
// Returns {private, public} paths.
std::pair<std::string, std::string> generate_pem_key_pair(const TempDir& dir, const std::string& kind,
                                                          const std::string& name = "");

// The CLI with ARGS, `input` on its standard input.
ProcessResult run_capsa(const std::vector<std::string>& args, const std::string& input = "");

// How many lines `text` has (its newlines).
int line_count(const std::string& text);

// Flips one bit of the byte at `offset` of `path`.
void flip_byte(const std::string& path, long offset);

}  // namespace capsa::test
