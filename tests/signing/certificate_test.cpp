// `capsa verify --certificate` against a PKI made by openssl at test time (test_pki.hpp):
// a SIF signed with a leaf's key verifies through the leaf's chain and says who signed
// it; a wrong root, an expired certificate, one for another key, one that may not sign
// code, a revoked one (asked of a real `openssl ocsp` responder) and an unreachable
// responder each fail in one line naming the certificate or object.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "keyring_sandbox.hpp"
#include "support/process.hpp"
#include "support/test_env.hpp"
#include "test_pki.hpp"

namespace capsa::signing {
namespace {

using test::IssuedCertificate;
using test::KeyringSandbox;
using test::TestPki;

// The root and user variants of the suite may run at once: each takes its own ports.
int first_ocsp_port() {
  const char* base = std::getenv("CAPSA_TEST_OCSP_PORT");
  return (base != nullptr ? std::atoi(base) : 5210) + (geteuid() == 0 ? 0 : 5);
}

class VerifyCertificate : public ::testing::Test {
 protected:
  VerifyCertificate() : pki_(sandbox_.dir(), "capsa-pki", first_ocsp_port()) {}

  // A copy of the two-group fixture signed with `signer`'s key.
  std::string signed_image(const IssuedCertificate& signer, const std::string& name) const {
    std::string image = sandbox_.copy_fixture("images/two-groups.sif", name + ".sif");
    auto signed_ = test::run_capsa({"-q", "sign", "--key", signer.private_key, image});
    EXPECT_EQ(signed_.exit_code, 0) << signed_.err;
    return image;
  }

  test::ProcessResult verify(const std::string& image, const IssuedCertificate& certificate,
                             std::vector<std::string> extra = {}) const {
    std::vector<std::string> args = {"verify",
                                     "--certificate",
                                     certificate.certificate,
                                     "--certificate-intermediates",
                                     pki_.intermediate(),
                                     "--certificate-roots",
                                     pki_.root()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(image);
    return test::run_capsa(args);
  }

  // Exit status non-zero, nothing on standard output, one line on standard error that
  // contains `expected`.
  static void expect_one_line_failure(const test::ProcessResult& result, const std::string& expected) {
    EXPECT_NE(result.exit_code, 0);
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(test::line_count(result.err), 1) << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
  }

  KeyringSandbox sandbox_;
  TestPki pki_;
};

TEST_F(VerifyCertificate, EachLeafKindVerifiesThroughItsChainAndSaysWhoSigned) {
  for (const std::string kind : {"rsa", "ecdsa", "ed25519"}) {
    const IssuedCertificate signer = pki_.issue("signer-" + kind, kind);
    const std::string image = signed_image(signer, kind);
    auto verified = verify(image, signer);
    ASSERT_EQ(verified.exit_code, 0) << kind << ": " << verified.err;
    const std::string type = kind == "rsa" ? "RSA" : kind == "ecdsa" ? "ECDSA" : "ED25519";
    std::string signer_lines = "[LOCAL]            Signing certificate: CN=signer-" + kind;
    signer_lines += ",O=capsa test\n[LOCAL]            Signing key: ";
    signer_lines += type;
    signer_lines += " key\n";
    EXPECT_NE(verified.out.find(signer_lines), std::string::npos) << verified.out;
    EXPECT_NE(verified.out.find("1   |1       |NONE    |FS\n"), std::string::npos) << verified.out;
    EXPECT_NE(verified.out.find("3   |2       |NONE    |FS\n"), std::string::npos) << verified.out;
    EXPECT_NE(verified.err.find("Verified signature(s) from image"), std::string::npos) << verified.err;
  }
}

TEST_F(VerifyCertificate, TheFlagsComeFromApptainersEnvironmentVariablesToo) {
  const IssuedCertificate signer = pki_.issue("signer-env", "ecdsa");
  const std::string image = signed_image(signer, "env");
  setenv("APPTAINER_VERIFY_CERTIFICATE", signer.certificate.c_str(), 1);
  setenv("APPTAINER_VERIFY_INTERMEDIATES", pki_.intermediate().c_str(), 1);
  setenv("APPTAINER_VERIFY_ROOTS", pki_.root().c_str(), 1);
  auto verified = test::run_capsa({"verify", image});
  unsetenv("APPTAINER_VERIFY_CERTIFICATE");
  unsetenv("APPTAINER_VERIFY_INTERMEDIATES");
  unsetenv("APPTAINER_VERIFY_ROOTS");
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find("Signing certificate: CN=signer-env,O=capsa test"), std::string::npos) << verified.out;
}

TEST_F(VerifyCertificate, AChainThatReachesNoGivenRootFails) {
  const IssuedCertificate signer = pki_.issue("signer", "rsa");
  const std::string image = signed_image(signer, "image");
  const TestPki other(sandbox_.dir(), "other-pki", first_ocsp_port());
  auto wrong_root = test::run_capsa({"verify", "--certificate", signer.certificate, "--certificate-intermediates",
                                     pki_.intermediate(), "--certificate-roots", other.root(), image});
  expect_one_line_failure(wrong_root,
                          "signer.pem: certificate 'CN=signer,O=capsa test' (signer.pem) is not trusted: unable to "
                          "get local issuer certificate (no chain to a trusted root");
  // The intermediate is needed to reach the root.
  auto no_intermediate =
      test::run_capsa({"verify", "--certificate", signer.certificate, "--certificate-roots", pki_.root(), image});
  expect_one_line_failure(no_intermediate, "(signer.pem) is not trusted: unable to get local issuer certificate");
}

TEST_F(VerifyCertificate, AnExpiredCertificateFails) {
  const IssuedCertificate expired = pki_.issue("expired", "ed25519", TestPki::Usage::CodeSigning,
                                               TestPki::Responder::Listening, "20200101000000Z", "20210101000000Z");
  const std::string image = signed_image(expired, "image");
  expect_one_line_failure(
      verify(image, expired),
      "certificate 'CN=expired,O=capsa test' (expired.pem) is not trusted: certificate has expired");
}

TEST_F(VerifyCertificate, ACertificateForAnotherKeyFailsNamingTheSignature) {
  const IssuedCertificate signer = pki_.issue("signer", "ecdsa");
  const IssuedCertificate other = pki_.issue("other", "ecdsa");
  const std::string image = signed_image(signer, "image");
  expect_one_line_failure(verify(image, other),
                          "signature object 4 was not made by the key of certificate 'CN=other,O=capsa test' "
                          "(other.pem)");
}

TEST_F(VerifyCertificate, ACertificateThatMayNotSignCodeFails) {
  const IssuedCertificate server = pki_.issue("server", "rsa", TestPki::Usage::ServerAuthOnly);
  const std::string image = signed_image(server, "image");
  expect_one_line_failure(verify(image, server),
                          "certificate 'CN=server,O=capsa test' (server.pem) does not permit code signing");
}

TEST_F(VerifyCertificate, OcspPassesAGoodCertificateAndFailsARevokedOne) {
  const IssuedCertificate good = pki_.issue("good", "ed25519");
  const IssuedCertificate revoked = pki_.issue("revoked", "rsa");
  pki_.revoke(revoked);
  const std::string good_image = signed_image(good, "good");
  const std::string revoked_image = signed_image(revoked, "revoked");
  // Without --ocsp-verify nobody asks: the revoked certificate still verifies.
  EXPECT_EQ(verify(revoked_image, revoked).exit_code, 0);
  auto responders = pki_.start_responders();
  auto passed = verify(good_image, good, {"--ocsp-verify"});
  EXPECT_EQ(passed.exit_code, 0) << passed.err;
  EXPECT_NE(passed.out.find("Signing certificate: CN=good,O=capsa test"), std::string::npos) << passed.out;
  const std::string url = "http://127.0.0.1:" + std::to_string(pki_.leaf_responder_port());
  expect_one_line_failure(verify(revoked_image, revoked, {"--ocsp-verify"}),
                          "certificate 'CN=revoked,O=capsa test' (revoked.pem) was revoked on ");
  auto failed = verify(revoked_image, revoked, {"--ocsp-verify"});
  EXPECT_NE(failed.err.find("(keyCompromise), says the OCSP responder " + url), std::string::npos) << failed.err;
}

TEST_F(VerifyCertificate, OcspAsksAboutADelegatedResponderThatDoesNotSayNoCheck) {
  const TestPki pki(sandbox_.dir(), "checked-pki", first_ocsp_port(), false);
  const IssuedCertificate good = pki.issue("good", "ecdsa");
  const std::string image = signed_image(good, "good");
  auto verify_with_ocsp = [&] {
    return test::run_capsa({"verify", "--certificate", good.certificate, "--certificate-intermediates",
                            pki.intermediate(), "--certificate-roots", pki.root(), "--ocsp-verify", image});
  };
  {
    auto responders = pki.start_responders();
    auto passed = verify_with_ocsp();
    EXPECT_EQ(passed.exit_code, 0) << passed.err;
  }
  // The responder's own certificate revoked: its word about the leaf counts no more.
  pki.revoke_leaf_responder();
  auto responders = pki.start_responders();
  expect_one_line_failure(verify_with_ocsp(),
                          "certificate 'CN=good,O=capsa test' (good.pem), whose OCSP responder "
                          "certificate 'CN=checked-pki OCSP responder,O=capsa test' was revoked on ");
}

TEST_F(VerifyCertificate, OcspFailsWhenTheResponderCannotBeAskedOrIsNamedNowhere) {
  const IssuedCertificate unreachable =
      pki_.issue("unreachable", "ecdsa", TestPki::Usage::CodeSigning, TestPki::Responder::Unreachable);
  const IssuedCertificate unnamed =
      pki_.issue("unnamed", "ecdsa", TestPki::Usage::CodeSigning, TestPki::Responder::None);
  auto responders = pki_.start_responders();
  const std::string url = "http://127.0.0.1:" + std::to_string(pki_.leaf_responder_port() + 2);
  expect_one_line_failure(
      verify(signed_image(unreachable, "unreachable"), unreachable, {"--ocsp-verify"}),
      "certificate 'CN=unreachable,O=capsa test' (unreachable.pem): the OCSP responder " + url + " cannot be reached");
  expect_one_line_failure(verify(signed_image(unnamed, "unnamed"), unnamed, {"--ocsp-verify"}),
                          "certificate 'CN=unnamed,O=capsa test' (unnamed.pem) names no OCSP responder");
}

TEST_F(VerifyCertificate, BadCertificateFilesAreOneLine) {
  const IssuedCertificate signer = pki_.issue("signer", "rsa");
  const std::string image = signed_image(signer, "image");
  const std::string not_pem = sandbox_.dir().write("not-a-certificate.pem", "hello\n");
  expect_one_line_failure(test::run_capsa({"verify", "--certificate", not_pem, image}),
                          "not-a-certificate.pem: not a PEM certificate");
  expect_one_line_failure(
      test::run_capsa({"verify", "--certificate", signer.certificate, "--certificate-roots", not_pem, image}),
      "not-a-certificate.pem: not a file of PEM certificates");
  expect_one_line_failure(test::run_capsa({"verify", "--certificate", sandbox_.dir() / "missing.pem", image}),
                          "missing.pem: cannot read the certificate file");
}

}  // namespace
}  // namespace capsa::signing
