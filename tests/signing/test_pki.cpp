#include "test_pki.hpp"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "keyring_sandbox.hpp"
#include "support/process.hpp"

namespace capsa::test {
namespace {

constexpr const char* kOrganization = "capsa test";

std::string url_for(int port) { return "http://127.0.0.1:" + std::to_string(port); }

// `openssl ocsp` says so once it listens. (A probing connection would not do: the
// responder waits on it for good once it is closed without a request.)
bool listening(const std::string& log) {
  return read_file(log).find("waiting for OCSP client connections") != std::string::npos;
}

}  // namespace

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = run_process(argv);
  if (result.exit_code != 0) throw std::runtime_error("openssl " + args.front() + ": " + result.err);
}

TestPki::TestPki(const TempDir& dir, const std::string& name, int first_port, bool responders_say_no_check)
    : base_(dir / name),
      root_dir_(base_ + "/root"),
      intermediate_dir_(base_ + "/intermediate"),
      first_port_(first_port) {
  make_ca_dir(root_dir_);
  make_ca_dir(intermediate_dir_);
  const std::string root_config = root_dir_ + "/ca.cnf";
  openssl({"req", "-x509", "-config", root_config, "-extensions", "v3_root", "-newkey", "rsa:2048", "-nodes", "-keyout",
           root_dir_ + "/ca.key", "-out", root(), "-days", "3650", "-subj",
           std::string("/O=") + kOrganization + "/CN=" + name + " root CA"});
  openssl({"req", "-new", "-config", root_config, "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
           "-keyout", intermediate_dir_ + "/ca.key", "-out", intermediate_dir_ + "/ca.csr", "-subj",
           std::string("/O=") + kOrganization + "/CN=" + name + " intermediate CA"});
  openssl({"ca", "-batch", "-notext", "-config", root_config, "-extensions", "v3_intermediate", "-days", "1825", "-in",
           intermediate_dir_ + "/ca.csr", "-out", intermediate()});
  // Each CA's delegated OCSP responder: a certificate it issued for OCSP signing only.
  for (const auto& ca : {root_dir_, intermediate_dir_}) {
    openssl({"req", "-new", "-config", ca + "/ca.cnf", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", ca + "/ocsp.key", "-out", ca + "/ocsp.csr", "-subj",
             std::string("/O=") + kOrganization + "/CN=" + name + " OCSP responder"});
    openssl({"ca", "-batch", "-notext", "-config", ca + "/ca.cnf", "-extensions",
             responders_say_no_check ? "ocsp_responder" : "ocsp_responder_checked", "-in", ca + "/ocsp.csr", "-out",
             ca + "/ocsp.pem"});
  }
}

void TestPki::make_ca_dir(const std::string& dir) const {
  std::filesystem::create_directories(dir + "/newcerts");
  std::ofstream(dir + "/index.txt").flush();
  std::ofstream(dir + "/serial") << "1000\n";
  write_config(dir);
}

void TestPki::write_config(const std::string& dir) const {
  const std::string leaf_common =
      "basicConstraints = critical, CA:FALSE\n"
      "keyUsage = critical, digitalSignature\n"
      "subjectKeyIdentifier = hash\n"
      "authorityKeyIdentifier = keyid:always\n";
  std::ofstream config(dir + "/ca.cnf");
  config << "[ca]\ndefault_ca = this_ca\n"
         << "[this_ca]\ndir = " << dir << "\n"
         << "database = $dir/index.txt\nnew_certs_dir = $dir/newcerts\nserial = $dir/serial\n"
         << "certificate = $dir/ca.pem\nprivate_key = $dir/ca.key\ndefault_md = sha256\ndefault_days = 365\n"
         << "policy = any_name\nunique_subject = no\ncopy_extensions = none\n"
         << "[any_name]\norganizationName = optional\ncommonName = supplied\n"
         << "[req]\ndistinguished_name = dn\n[dn]\n"
         << "[v3_root]\nbasicConstraints = critical, CA:TRUE\nkeyUsage = critical, keyCertSign, cRLSign\n"
         << "subjectKeyIdentifier = hash\n"
         << "[v3_intermediate]\nbasicConstraints = critical, CA:TRUE, pathlen:0\n"
         << "keyUsage = critical, keyCertSign, cRLSign\nsubjectKeyIdentifier = hash\n"
         << "authorityKeyIdentifier = keyid:always\n"
         << "authorityInfoAccess = OCSP;URI:" << url_for(first_port_ + 1) << "\n"
         << "[code_signing]\n"
         << leaf_common << "extendedKeyUsage = codeSigning\n"
         << "authorityInfoAccess = OCSP;URI:" << url_for(first_port_) << "\n"
         << "[code_signing_unreachable]\n"
         << leaf_common << "extendedKeyUsage = codeSigning\n"
         << "authorityInfoAccess = OCSP;URI:" << url_for(first_port_ + 2) << "\n"
         << "[code_signing_no_ocsp]\n"
         << leaf_common << "extendedKeyUsage = codeSigning\n"
         << "[server_auth]\n"
         << leaf_common << "extendedKeyUsage = serverAuth\n"
         << "authorityInfoAccess = OCSP;URI:" << url_for(first_port_) << "\n"
         << "[ocsp_responder]\n"
         << leaf_common << "extendedKeyUsage = OCSPSigning\nnoCheck = ignored\n"
         << "[ocsp_responder_checked]\n"
         << leaf_common << "extendedKeyUsage = OCSPSigning\n"
         << "authorityInfoAccess = OCSP;URI:" << url_for(dir == root_dir_ ? first_port_ + 1 : first_port_) << "\n";
}

IssuedCertificate TestPki::issue(const std::string& name, const std::string& kind, Usage usage, Responder responder,
                                 const std::string& not_before, const std::string& not_after) const {
  TempDir unused;  // generate_pem_key_pair writes into a TempDir; the keys are moved out
  const std::string private_key = generate_pem_key_pair(unused, kind, name).first;
  IssuedCertificate issued{base_ + "/" + name + ".pem", base_ + "/" + name + ".key",
                           "CN=" + name + ",O=" + kOrganization};
  std::filesystem::copy_file(private_key, issued.private_key);
  const std::string config = intermediate_dir_ + "/ca.cnf";
  openssl({"req", "-new", "-config", config, "-key", issued.private_key, "-out", base_ + "/" + name + ".csr", "-subj",
           std::string("/O=") + kOrganization + "/CN=" + name});
  std::string extensions = usage == Usage::ServerAuthOnly        ? "server_auth"
                           : responder == Responder::Unreachable ? "code_signing_unreachable"
                           : responder == Responder::None        ? "code_signing_no_ocsp"
                                                                 : "code_signing";
  std::vector<std::string> args = {"ca",
                                   "-batch",
                                   "-notext",
                                   "-config",
                                   config,
                                   "-extensions",
                                   extensions,
                                   "-in",
                                   base_ + "/" + name + ".csr",
                                   "-out",
                                   issued.certificate};
  if (!not_before.empty()) args.insert(args.end(), {"-startdate", not_before});
  if (!not_after.empty()) args.insert(args.end(), {"-enddate", not_after});
  openssl(args);
  return issued;
}

void TestPki::revoke(const IssuedCertificate& certificate) const {
  openssl({"ca", "-config", intermediate_dir_ + "/ca.cnf", "-revoke", certificate.certificate, "-crl_reason",
           "keyCompromise"});
}

void TestPki::revoke_leaf_responder() const {
  openssl({"ca", "-config", intermediate_dir_ + "/ca.cnf", "-revoke", intermediate_dir_ + "/ocsp.pem", "-crl_reason",
           "keyCompromise"});
}

std::unique_ptr<Background> TestPki::start_responder(const std::string& ca_dir, int port) const {
  auto responder = std::make_unique<Background>(
      std::vector<std::string>{"openssl", "ocsp", "-index", ca_dir + "/index.txt", "-port", std::to_string(port),
                               "-rsigner", ca_dir + "/ocsp.pem", "-rkey", ca_dir + "/ocsp.key", "-CA",
                               ca_dir + "/ca.pem", "-ignore_err"},
      ca_dir + "/ocsp.log");
  const std::string log = ca_dir + "/ocsp.log";
  if (!eventually([&log] { return std::filesystem::exists(log) && listening(log); }, 20))
    throw std::runtime_error("openssl ocsp did not listen on port " + std::to_string(port) + ": " + read_file(log));
  return responder;
}

std::pair<std::unique_ptr<Background>, std::unique_ptr<Background>> TestPki::start_responders() const {
  return {start_responder(intermediate_dir_, first_port_), start_responder(root_dir_, first_port_ + 1)};
}

}  // namespace capsa::test
