#pragma once
// A throw-away PKI made with the openssl command for the certificate tests: a root CA, an
// intermediate CA under it, code-signing leaf certificates under the intermediate (RSA,
// ECDSA or Ed25519 keys), and `openssl ocsp` responders for both CAs. Certificates carry
// an OCSP URI (authority information access) on 127.0.0.1; no private key is committed.
#include <memory>
#include <string>

#include "support/background.hpp"
#include "support/temp_dir.hpp"

namespace capsa::test {

struct IssuedCertificate {
  std::string certificate;  // PEM
  std::string private_key;  // PEM, for `capsa sign --key`
  std::string subject;      // as capsa prints it: "CN=NAME,O=capsa test"
};

class TestPki {
 public:
  enum class Usage { CodeSigning, ServerAuthOnly };
  enum class Responder { Listening, Unreachable, None };

  // Files go under dir/NAME. Responders listen on first_port (the intermediate's, for the
  // leaves) and first_port + 1 (the root's, for the intermediate); a leaf issued with
  // Responder::Unreachable names first_port + 2, where nothing listens.
  // `responders_say_no_check`: the responders' certificates carry id-pkix-ocsp-nocheck,
  // so that no client asks about them in turn.
  TestPki(const TempDir& dir, const std::string& name, int first_port, bool responders_say_no_check = true);

  std::string root() const { return root_dir_ + "/ca.pem"; }
  std::string intermediate() const { return intermediate_dir_ + "/ca.pem"; }
  int leaf_responder_port() const { return first_port_; }

  // A leaf certificate for a new key of `kind` ("rsa", "ecdsa", "ed25519"). Dates as
  // openssl ca takes them (YYYYMMDDHHMMSSZ); empty: valid from now for a year.
  IssuedCertificate issue(const std::string& name, const std::string& kind, Usage usage = Usage::CodeSigning,
                          Responder responder = Responder::Listening, const std::string& not_before = "",
                          const std::string& not_after = "") const;
  // Marks `certificate` revoked (keyCompromise) in the intermediate's database; a
  // responder started afterwards reports it so.
  void revoke(const IssuedCertificate& certificate) const;
  // Likewise the intermediate's OCSP responder's own certificate.
  void revoke_leaf_responder() const;
  // Starts the two responders and waits until both accept connections; they are killed
  // when the result is destroyed.
  std::pair<std::unique_ptr<Background>, std::unique_ptr<Background>> start_responders() const;

 private:
  void make_ca_dir(const std::string& dir) const;
  void write_config(const std::string& dir) const;
  std::unique_ptr<Background> start_responder(const std::string& ca_dir, int port) const;

  std::string base_;
  std::string root_dir_;
  std::string intermediate_dir_;
  int first_port_;
};

// openssl(1) with ARGS; throws with its standard error when it fails.
void openssl(const std::vector<std::string>& args);

}  // namespace capsa::test
