// verify_image against the upstream signed fixtures (apptainer/sif test/images), which
// must verify exactly as Apptainer's verifier reports them, and against copies with one
// byte changed, which must fail naming what changed.
#include <gtest/gtest.h>

#include "keyring_sandbox.hpp"
#include "signing/verify.hpp"
#include "support/process.hpp"
#include "support/test_env.hpp"

namespace capsa::signing {
namespace {

using test::KeyringSandbox;
using test::sif_fixture;

std::vector<std::uint32_t> verified_ids(const VerificationResult& result) {
  std::vector<std::uint32_t> ids;
  for (const auto& signature : result.signatures)
    for (const auto& d : signature.objects) ids.push_back(d.id);
  return ids;
}

std::string failure_of(const std::string& path, const VerifyOptions& options) {
  try {
    verify_image(path, options);
  } catch (const VerificationError& e) {
    return e.what();
  }
  return "(verified)";
}

VerifyOptions with_key(const std::string& key) {
  VerifyOptions options;
  options.public_key_files = {sif_fixture("keys/" + key)};
  return options;
}

TEST(Verify, UpstreamPgpFixturesVerifyWithTheirKey) {
  KeyringSandbox sandbox;
  sandbox.trust_upstream_pgp_key();
  auto one = verify_image(sif_fixture("images/one-group-signed-pgp.sif"), {});
  ASSERT_EQ(one.signatures.size(), 1u);
  EXPECT_EQ(one.signatures[0].signature_id, 3u);
  EXPECT_EQ(one.signatures[0].format, SignatureFormat::Pgp);
  ASSERT_EQ(one.signatures[0].signers.size(), 1u);
  EXPECT_EQ(one.signatures[0].signers[0].fingerprint, test::kUpstreamPgpFingerprint);
  EXPECT_EQ(one.signatures[0].signers[0].name, "Unit Test");
  EXPECT_EQ(verified_ids(one), (std::vector<std::uint32_t>{1, 2}));
  EXPECT_EQ(one.signers_of(2), std::vector<std::string>{test::kUpstreamPgpFingerprint});

  auto two = verify_image(sif_fixture("images/two-groups-signed-pgp.sif"), {});
  ASSERT_EQ(two.signatures.size(), 2u);
  EXPECT_EQ(two.signatures[0].signature_id, 4u);
  EXPECT_EQ(two.signatures[1].signature_id, 5u);
  EXPECT_EQ(verified_ids(two), (std::vector<std::uint32_t>{1, 2, 3}));

  VerifyOptions group2;
  group2.group_id = 2;
  EXPECT_EQ(verified_ids(verify_image(sif_fixture("images/two-groups-signed-pgp.sif"), group2)),
            std::vector<std::uint32_t>{3});
  VerifyOptions object1;
  object1.object_id = 1;
  EXPECT_EQ(verified_ids(verify_image(sif_fixture("images/two-groups-signed-pgp.sif"), object1)),
            std::vector<std::uint32_t>{1});
}

TEST(Verify, UpstreamDsseFixturesVerifyWithEitherOfTheirKeys) {
  KeyringSandbox sandbox;
  for (const std::string key : {"ed25519-public.pem", "rsa-public.pem"}) {
    auto one = verify_image(sif_fixture("images/one-group-signed-dsse.sif"), with_key(key));
    ASSERT_EQ(one.signatures.size(), 1u) << key;
    EXPECT_EQ(one.signatures[0].format, SignatureFormat::Dsse);
    EXPECT_EQ(verified_ids(one), (std::vector<std::uint32_t>{1, 2})) << key;
    auto two = verify_image(sif_fixture("images/two-groups-signed-dsse.sif"), with_key(key));
    EXPECT_EQ(verified_ids(two), (std::vector<std::uint32_t>{1, 2, 3})) << key;
  }
  // The key IDs the reference signer wrote into the envelope are these keys' fingerprints.
  auto ed = verify_image(sif_fixture("images/one-group-signed-dsse.sif"), with_key("ed25519-public.pem"));
  EXPECT_EQ(ed.signatures[0].signers.at(0).fingerprint, "SHA256:x6l8ZblpSSXGaPMCzySedWg88BwIFcz8jlPb6el0mFs");
  EXPECT_EQ(ed.signatures[0].signers.at(0).name, "ED25519 key");
  auto rsa = verify_image(sif_fixture("images/one-group-signed-dsse.sif"), with_key("rsa-public.pem"));
  EXPECT_EQ(rsa.signatures[0].signers.at(0).fingerprint, "SHA256:BhCwr7qZulYcOMSl2Jt2DuYHxHNnN6th4NdMqR/PGa4");
  // The ECDSA key signed nothing.
  EXPECT_NE(failure_of(sif_fixture("images/one-group-signed-dsse.sif"), with_key("ecdsa-public.pem"))
                .find("signature object 3 was not made by the key given with --key"),
            std::string::npos);
}

struct LegacyCase {
  std::string fixture;
  std::optional<std::uint32_t> group;
  std::optional<std::uint32_t> object;
  bool all;
  std::vector<std::uint32_t> verified;  // empty: verification fails
  std::string error;
};

TEST(Verify, LegacyFixturesVerifyAsApptainerReportsThem) {
  KeyringSandbox sandbox;
  sandbox.trust_upstream_pgp_key();
  // Apptainer's rules (internal/pkg/signature/verify.go, sif pkg/integrity): with
  // --legacy-insecure alone the primary partition's own signature is checked, with --all
  // every grouped object's, with --group-id a signature of the whole group.
  const std::vector<LegacyCase> cases = {
      {"one-group-signed-legacy", {}, {}, false, {2}, ""},
      {"one-group-signed-legacy", {}, {}, true, {}, "no signature found for object 1 (FS)"},
      {"one-group-signed-legacy", 1, {}, false, {}, "no signature found for object group 1"},
      {"one-group-signed-legacy-group", {}, {}, false, {}, "no signature found for object 2 (FS)"},
      {"one-group-signed-legacy-group", 1, {}, false, {1, 2}, ""},
      {"one-group-signed-legacy-all", {}, {}, false, {2}, ""},
      {"one-group-signed-legacy-all", {}, {}, true, {1, 2}, ""},
      {"one-group-signed-legacy-all", {}, 1, false, {1}, ""},
      {"two-groups-signed-legacy", {}, {}, false, {2}, ""},
      {"two-groups-signed-legacy-group", 1, {}, false, {1, 2}, ""},
      {"two-groups-signed-legacy-all", {}, {}, false, {2}, ""},
      {"two-groups-signed-legacy-all", {}, {}, true, {}, "no signature found for object 3 (FS)"},
  };
  for (const auto& c : cases) {
    VerifyOptions options;
    options.legacy = true;
    options.all = c.all;
    options.group_id = c.group;
    options.object_id = c.object;
    const std::string path = sif_fixture("images/" + c.fixture + ".sif");
    const std::string what =
        c.fixture + (c.all ? " --all" : "") + (c.group ? " --group-id" : "") + (c.object ? " --sif-id" : "");
    if (c.verified.empty()) {
      EXPECT_NE(failure_of(path, options).find(c.error), std::string::npos)
          << what << ": " << failure_of(path, options);
    } else {
      auto result = verify_image(path, options);
      EXPECT_EQ(verified_ids(result), c.verified) << what;
      EXPECT_EQ(result.signatures.at(0).format, SignatureFormat::LegacyPgp) << what;
      EXPECT_EQ(result.signatures.at(0).signers.at(0).fingerprint, test::kUpstreamPgpFingerprint) << what;
    }
  }
  // Without --legacy-insecure a legacy signature does not count, and the error says so.
  EXPECT_NE(failure_of(sif_fixture("images/one-group-signed-legacy-group.sif"), {}).find("add --legacy-insecure"),
            std::string::npos);
}

TEST(Verify, UnsignedAndUnknownlySignedImagesFailInOneLineNamingWhat) {
  KeyringSandbox sandbox;
  EXPECT_NE(failure_of(sif_fixture("images/one-group.sif"), {}).find("no signature found for object group 1"),
            std::string::npos);
  EXPECT_NE(failure_of(sif_fixture("images/empty.sif"), {}).find("nothing in the image is signed"), std::string::npos);
  // No key imported: the signer's key is named in full.
  const std::string unknown = failure_of(sif_fixture("images/one-group-signed-pgp.sif"), {});
  EXPECT_NE(unknown.find("signature object 3 is signed by key 12045C8C0B1004D058DE4BEDA20C27EE7FF7BA84, which is "
                         "not in the keyring"),
            std::string::npos)
      << unknown;
  const std::string busybox = failure_of(sif_fixture("real/busybox_amd64.sif"), {});
  EXPECT_NE(busybox.find("key 1137E72E6816BFC06D9CAA0D15F3F4F4F14B03B2"), std::string::npos) << busybox;
  // Signatures of the other kind than the key material given.
  EXPECT_NE(failure_of(sif_fixture("images/one-group-signed-dsse.sif"), {}).find("verify it with --key"),
            std::string::npos);
  EXPECT_NE(
      failure_of(sif_fixture("images/one-group-signed-pgp.sif"), with_key("rsa-public.pem")).find("is a PGP signature"),
      std::string::npos);
  for (const std::string& message : {unknown, busybox}) EXPECT_EQ(message.find('\n'), std::string::npos);
  // A file that is no PEM public key.
  try {
    verify_image(sif_fixture("images/one-group-signed-dsse.sif"), with_key("pgp-public.asc"));
    ADD_FAILURE() << "a PGP key file was taken for a PEM key";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pgp-public.asc: not a PEM public key"), std::string::npos) << e.what();
  }
}

// Object data of the fixtures: object 1 at 32768, object 2 at 36864, object 3 at 40960.
constexpr long kData1 = 32768, kData2 = 36864;
// Descriptor N at 4096 + 585 (N - 1); its name field at +73.
constexpr long descriptor_name(int id) { return 4096 + 585L * (id - 1) + 73; }

struct SignedFixture {
  std::string name;
  VerifyOptions options;
};

std::vector<SignedFixture> current_format_fixtures() {
  return {{"one-group-signed-pgp", {}},
          {"two-groups-signed-pgp", {}},
          {"one-group-signed-dsse", with_key("ed25519-public.pem")},
          {"two-groups-signed-dsse", with_key("rsa-public.pem")}};
}

TEST(Verify, OneChangedByteOfASignedObjectFailsNamingTheObject) {
  KeyringSandbox sandbox;
  sandbox.trust_upstream_pgp_key();
  for (const auto& fixture : current_format_fixtures()) {
    for (auto [id, offset] : {std::pair{1, kData1}, std::pair{2, kData2 + 100}}) {
      const std::string copy = sandbox.copy_fixture("images/" + fixture.name + ".sif", "changed.sif");
      ASSERT_NO_THROW(verify_image(copy, fixture.options)) << fixture.name;
      test::flip_byte(copy, offset);
      const std::string error = failure_of(copy, fixture.options);
      EXPECT_NE(error.find("object " + std::to_string(id) + " (FS): its data changed"), std::string::npos)
          << fixture.name << ": " << error;
    }
  }
  // Legacy signatures cover the data too.
  const std::string legacy = sandbox.copy_fixture("images/one-group-signed-legacy.sif", "legacy.sif");
  test::flip_byte(legacy, kData2 + 1);
  VerifyOptions options;
  options.legacy = true;
  EXPECT_NE(failure_of(legacy, options).find("object 2 (FS): its data changed"), std::string::npos)
      << failure_of(legacy, options);
  const std::string group = sandbox.copy_fixture("images/one-group-signed-legacy-group.sif", "legacy-group.sif");
  test::flip_byte(group, kData1);
  options.group_id = 1;
  EXPECT_NE(failure_of(group, options).find("the data of object group 1 changed"), std::string::npos)
      << failure_of(group, options);
}

TEST(Verify, OneChangedByteOfADescriptorOrTheHeaderFailsNamingIt) {
  KeyringSandbox sandbox;
  sandbox.trust_upstream_pgp_key();
  for (const auto& fixture : current_format_fixtures()) {
    for (int id : {1, 2}) {
      const std::string copy = sandbox.copy_fixture("images/" + fixture.name + ".sif", "changed.sif");
      test::flip_byte(copy, descriptor_name(id));
      const std::string error = failure_of(copy, fixture.options);
      EXPECT_NE(error.find("object " + std::to_string(id) + " (FS): its descriptor changed"), std::string::npos)
          << fixture.name << ": " << error;
    }
    const std::string uuid = sandbox.copy_fixture("images/" + fixture.name + ".sif", "uuid.sif");
    test::flip_byte(uuid, 50);
    EXPECT_NE(failure_of(uuid, fixture.options).find("the SIF header changed"), std::string::npos) << fixture.name;
  }
}

TEST(Verify, AChangedSignatureIsInvalidNamingIt) {
  KeyringSandbox sandbox;
  sandbox.trust_upstream_pgp_key();
  // Inside the signed JSON of the PGP message (after its two header lines) and inside the
  // base64 payload of the envelope.
  const std::string pgp = sandbox.copy_fixture("images/one-group-signed-pgp.sif", "pgp.sif");
  test::flip_byte(pgp, 40960 + 100);
  EXPECT_NE(failure_of(pgp, {}).find("signature object 3 is not valid"), std::string::npos) << failure_of(pgp, {});
  const std::string dsse = sandbox.copy_fixture("images/one-group-signed-dsse.sif", "dsse.sif");
  test::flip_byte(dsse, 40960 + 300);
  const auto options = with_key("ed25519-public.pem");
  const std::string error = failure_of(dsse, options);
  EXPECT_TRUE(error.find("signature object 3") != std::string::npos) << error;
}

TEST(Verify, TheCommandFailsWithOneLineAndNoOutput) {
  KeyringSandbox sandbox;
  const std::string corrupt = sandbox.copy_fixture("images/one-group-signed-dsse.sif", "corrupt.sif");
  test::flip_byte(corrupt, kData2);
  const std::string not_sif = sandbox.dir().write("not.sif", "hello");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"verify", sif_fixture("images/one-group.sif")}, "no signature found for object group 1"},
      {{"verify", sif_fixture("images/one-group-signed-pgp.sif")}, "which is not in the keyring"},
      {{"verify", "--key", sif_fixture("keys/pgp-public.asc"), sif_fixture("images/one-group-signed-dsse.sif")},
       "not a PEM public key"},
      {{"verify", "--key", sif_fixture("keys/ecdsa-public.pem"), sif_fixture("images/one-group-signed-dsse.sif")},
       "was not made by the key given with --key"},
      {{"verify", "--key", sif_fixture("keys/rsa-public.pem"), corrupt}, "object 2 (FS): its data changed"},
      {{"verify", sandbox.dir() / "missing.sif"}, "missing.sif: No such file or directory"},
      {{"verify", not_sif}, "not.sif: not a SIF image"},
      {{"verify", "--sif-id", "9", sif_fixture("images/one-group-signed-pgp.sif")}, "there is no object 9"},
      // A keyserver that cannot be reached is named (tests/keyserver asks a real one).
      {{"verify", "--url", "http://127.0.0.1:1", sif_fixture("images/one-group-signed-pgp.sif")},
       "fetching it failed: keyserver http://127.0.0.1:1 is unreachable"},
  };
  for (const auto& [args, phrase] : cases) {
    std::vector<std::string> argv = {test::capsa_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = test::run_process(argv);
    EXPECT_EQ(result.exit_code, 1) << phrase;
    EXPECT_EQ(result.out, "") << phrase;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_NE(result.err.find(phrase), std::string::npos) << result.err;
  }
}

}  // namespace
}  // namespace capsa::signing
