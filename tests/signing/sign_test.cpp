// capsa sign, then capsa verify and siftool: round trips for OpenPGP keys and for each
// kind of PEM key, made fresh by openssl at test time (no private key is committed).
#include <gtest/gtest.h>

#include <filesystem>

#include "keyring_sandbox.hpp"
#include "sif/image.hpp"
#include "sif/writer.hpp"
#include "signing/dsse.hpp"
#include "support/process.hpp"
#include "support/test_env.hpp"

namespace capsa::signing {
namespace {

using test::KeyringSandbox;
using test::read_file;
using test::run_process;

test::ProcessResult capsa(const std::vector<std::string>& args, const std::string& input = "") {
  return test::run_capsa(args, input);
}

int lines(const std::string& text) { return test::line_count(text); }

std::string signature_payload(const std::string& path, std::uint32_t id) {
  sif::Image image = sif::Image::open(path);
  auto envelope = parse_envelope(image.read_object(image.object(id)));
  return envelope ? envelope->payload : "";
}

TEST(Sign, EachPemKeyTypeSignsWhatVerifyAndSiftoolAccept) {
  KeyringSandbox sandbox;
  for (const std::string kind : {"rsa", "ecdsa", "ed25519"}) {
    auto [private_key, public_key] = test::generate_pem_key_pair(sandbox.dir(), kind);
    const std::string image = sandbox.copy_fixture("images/two-groups.sif", kind + ".sif");
    auto signed_ = capsa({"-q", "sign", "--key", private_key, image});
    ASSERT_EQ(signed_.exit_code, 0) << kind << ": " << signed_.err;
    auto verified = capsa({"verify", "--key", public_key, image});
    EXPECT_EQ(verified.exit_code, 0) << kind << ": " << verified.err;
    EXPECT_NE(verified.out.find("Signing key: " + std::string(kind == "rsa" ? "RSA" : kind == "ecdsa" ? "ECDSA" : "ED25519")),
              std::string::npos)
        << verified.out;
    EXPECT_NE(verified.out.find("3   |2       |NONE    |FS\n"), std::string::npos) << verified.out;
    // Another key of the same kind did not sign it.
    const std::string other = test::generate_pem_key_pair(sandbox.dir(), kind, "other-" + kind).second;
    auto wrong = capsa({"verify", "--key", other, image});
    EXPECT_NE(wrong.exit_code, 0) << kind;
    EXPECT_NE(wrong.err.find("signature object 4 was not made by the key given with --key"), std::string::npos)
        << wrong.err;
    EXPECT_EQ(wrong.out, "");
    // siftool sees the descriptors as it sees those of upstream-signed files.
    if (test::have_program("siftool")) {
      auto listed = run_process({"siftool", "list", image});
      EXPECT_NE(listed.out.find("4    |NONE    |1   (G) |303104-"), std::string::npos) << listed.out;
      EXPECT_NE(listed.out.find("|Signature (SHA-256)\n5    |NONE    |2   (G) |"), std::string::npos) << listed.out;
    }
    // One changed byte of the signed ext3 object is caught.
    test::flip_byte(image, 40960 + 1024);
    auto changed = capsa({"verify", "--key", public_key, image});
    EXPECT_NE(changed.exit_code, 0);
    EXPECT_NE(changed.err.find("object 3 (FS): its data changed"), std::string::npos) << changed.err;
    EXPECT_EQ(lines(changed.err), 1) << changed.err;
  }
}

TEST(Sign, AnEncryptedPemKeyTakesItsPassPhraseFromStandardInput) {
  KeyringSandbox sandbox;
  const std::string key = sandbox.dir() / "encrypted.pem", pub = sandbox.dir() / "encrypted-public.pem";
  // The test's own throw-away pass-phrase: given to openssl here, to capsa on stdin only.
  ASSERT_EQ(
      run_process({"openssl", "genpkey", "-algorithm", "ED25519", "-aes256", "-pass", "pass:opensesame", "-out", key})
          .exit_code,
      0);
  ASSERT_EQ(
      run_process({"openssl", "pkey", "-in", key, "-passin", "pass:opensesame", "-pubout", "-out", pub}).exit_code, 0);
  const std::string image = sandbox.copy_fixture("images/one-group.sif", "encrypted.sif");
  const std::string before = read_file(image);
  auto none = capsa({"sign", "--key", key, image});
  EXPECT_NE(none.err.find("encrypted.pem: the private key is encrypted; give its pass-phrase with --password-stdin"),
            std::string::npos)
      << none.err;
  auto wrong = capsa({"sign", "--key", key, "--password-stdin", image}, "closesesame\n");
  EXPECT_NE(wrong.err.find("wrong pass-phrase for the private key"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.err.find("closesesame"), std::string::npos);
  EXPECT_EQ(read_file(image), before);
  auto right = capsa({"-q", "sign", "--key", key, "--password-stdin", image}, "opensesame\n");
  ASSERT_EQ(right.exit_code, 0) << right.err;
  EXPECT_EQ(capsa({"-q", "verify", "--key", pub, image}).exit_code, 0);
}

TEST(Sign, SignedMetadataIsTheReferenceSignersByteForByte) {
  KeyringSandbox sandbox;
  auto [private_key, public_key] = test::generate_pem_key_pair(sandbox.dir(), "ed25519");
  const std::string image = sandbox.copy_fixture("images/two-groups.sif", "mine.sif");
  ASSERT_EQ(capsa({"-q", "sign", "--key", private_key, image}).exit_code, 0);
  // The payload signed is the JSON Apptainer's sif library signs for the same image.
  const std::string upstream = test::sif_fixture("images/two-groups-signed-dsse.sif");
  EXPECT_EQ(signature_payload(image, 4), signature_payload(upstream, 4));
  EXPECT_EQ(signature_payload(image, 5), signature_payload(upstream, 5));
  EXPECT_FALSE(signature_payload(image, 4).empty());
}

TEST(Sign, GroupAndObjectChoicesSignOnlyThose) {
  KeyringSandbox sandbox;
  auto [private_key, public_key] = test::generate_pem_key_pair(sandbox.dir(), "ecdsa");
  const std::string group = sandbox.copy_fixture("images/two-groups.sif", "group.sif");
  ASSERT_EQ(capsa({"-q", "sign", "--key", private_key, "--group-id", "2", group}).exit_code, 0);
  EXPECT_EQ(sif::Image::open(group).objects().size(), 4u);
  EXPECT_EQ(capsa({"-q", "verify", "--key", public_key, "--group-id", "2", group}).exit_code, 0);
  EXPECT_EQ(capsa({"-q", "verify", "--key", public_key, "--groupid", "2", group}).exit_code, 0);  // deprecated name
  auto whole = capsa({"-q", "verify", "--key", public_key, group});
  EXPECT_NE(whole.err.find("no signature found for object group 1"), std::string::npos) << whole.err;

  const std::string object = sandbox.copy_fixture("images/two-groups.sif", "object.sif");
  ASSERT_EQ(capsa({"-q", "sign", "--key", private_key, "--sif-id", "1", object}).exit_code, 0);
  EXPECT_EQ(capsa({"-q", "verify", "--key", public_key, "--id", "1", object}).exit_code, 0);  // deprecated name
  // The deprecated names sign the same way.
  const std::string old_names = sandbox.copy_fixture("images/two-groups.sif", "old-names.sif");
  ASSERT_EQ(capsa({"-q", "sign", "--key", private_key, "--groupid", "2", old_names}).exit_code, 0);
  ASSERT_EQ(capsa({"-q", "sign", "--key", private_key, "--id", "1", old_names}).exit_code, 0);
  EXPECT_EQ(sif::Image::open(old_names).objects().size(), 5u);
  EXPECT_EQ(capsa({"-q", "verify", "--key", public_key, "--group-id", "2", old_names}).exit_code, 0);
  EXPECT_EQ(capsa({"-q", "verify", "--key", public_key, "--sif-id", "1", old_names}).exit_code, 0);
  // --all (deprecated in Apptainer) signs every group, as sign does anyway.
  const std::string all_groups = sandbox.copy_fixture("images/two-groups.sif", "all.sif");
  ASSERT_EQ(capsa({"-q", "sign", "--key", private_key, "--all", all_groups}).exit_code, 0);
  EXPECT_EQ(sif::Image::open(all_groups).objects().size(), 5u);
  EXPECT_EQ(capsa({"-q", "verify", "--key", public_key, all_groups}).exit_code, 0);
  auto one = capsa({"-q", "verify", "--key", public_key, "--sif-id", "1", object});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  // The group as a whole is not signed: object 2 is not covered (Apptainer: "object not signed").
  auto all = capsa({"-q", "verify", "--key", public_key, "--group-id", "1", object});
  EXPECT_NE(all.err.find("object 2 (FS) was added to group 1 after signature object 4"), std::string::npos) << all.err;
}

TEST(Sign, OpenPgpRoundTripWithAProtectedKey) {
  KeyringSandbox sandbox;
  auto made = capsa({"key", "newpair", "-N", "Round Trip", "-E", "rt@example.org", "-b", "2048", "--password-stdin"},
                    "correct horse\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string image = sandbox.copy_fixture("images/one-group.sif", "pgp.sif");
  const std::string before = read_file(image);
  // A wrong pass-phrase: one line, and the image is as it was.
  auto wrong = capsa({"sign", "--password-stdin", image}, "battery staple\n");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_EQ(lines(wrong.err), 1) << wrong.err;
  EXPECT_EQ(wrong.err.find("battery"), std::string::npos);
  EXPECT_EQ(read_file(image), before);
  auto signed_ = capsa({"sign", "--password-stdin", image}, "correct horse\n");
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;
  EXPECT_NE(signed_.err.find("Signature created and applied to image"), std::string::npos);
  auto verified = capsa({"verify", image});
  ASSERT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find("[LOCAL]            Signing entity: Round Trip\n"), std::string::npos) << verified.out;
  // The descriptor records the signer's fingerprint, as siftool shows.
  auto listed = capsa({"key", "list"});
  const auto at = listed.out.find("Fingerprint:       ");
  ASSERT_NE(at, std::string::npos) << listed.out;
  const std::string fingerprint = listed.out.substr(at + 19, 40);
  EXPECT_NE(verified.out.find("Fingerprint: " + fingerprint), std::string::npos);
  if (test::have_program("siftool")) {
    auto info = run_process({"siftool", "info", "3", image});
    EXPECT_NE(info.out.find(fingerprint), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("Linked ID:    1 (G)"), std::string::npos) << info.out;
  }
  // A second key: sign needs to be told which.
  ASSERT_EQ(capsa({"key", "newpair", "-N", "Second", "-E", "2@example.org", "-b", "2048", "--password-stdin"}, "").exit_code, 0);
  auto ambiguous = capsa({"sign", image});
  EXPECT_NE(ambiguous.err.find("choose one with --keyidx"), std::string::npos) << ambiguous.err;
  auto out_of_range = capsa({"sign", "--keyidx", "7", image});
  EXPECT_NE(out_of_range.err.find("--keyidx 7"), std::string::npos) << out_of_range.err;
}

TEST(Sign, BadInputIsOneLineAndChangesNothing) {
  KeyringSandbox sandbox;
  auto [private_key, public_key] = test::generate_pem_key_pair(sandbox.dir(), "rsa");
  const std::string empty = sandbox.copy_fixture("images/empty.sif", "empty.sif");
  auto nothing = capsa({"sign", "--key", private_key, empty});
  EXPECT_NE(nothing.err.find("the image has no object groups, so there is nothing to sign"), std::string::npos)
      << nothing.err;
  // Two groups to sign and one free slot: nothing is added, rather than half the signatures.
  const std::string crowded = sandbox.copy_fixture("images/two-groups.sif", "crowded.sif");
  for (int i = 0; i < 44; ++i) {
    sif::ObjectInput filler;
    filler.data = "x";
    sif::add_object(crowded, filler, 0);
  }
  const std::string crowded_before = read_file(crowded);
  auto full = capsa({"sign", "--key", private_key, crowded});
  EXPECT_NE(full.err.find("2 signature(s) to add but only 1 free descriptor slot(s); nothing was signed"),
            std::string::npos)
      << full.err;
  EXPECT_EQ(read_file(crowded), crowded_before);

  const std::string image = sandbox.copy_fixture("images/one-group.sif", "one.sif");
  const std::string before = read_file(image);
  for (const auto& [args, phrase] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"sign", "--key", public_key, image}, "not a PEM private key"},
           {{"sign", "--key", test::sif_fixture("keys/pgp-public.asc"), image}, "not a PEM private key"},
           {{"sign", "--key", sandbox.dir() / "missing.pem", image}, "missing.pem: cannot read the key file"},
           {{"sign", image}, "no secret key in"},
           {{"sign", "--key", private_key, "--group-id", "9", image}, "there is no object group 9"},
           {{"sign", "--key", private_key, "--sif-id", "9", image}, "there is no object 9"},
       }) {
    auto result = capsa(args);
    EXPECT_EQ(result.exit_code, 1) << phrase;
    EXPECT_EQ(lines(result.err), 1) << result.err;
    EXPECT_NE(result.err.find(phrase), std::string::npos) << result.err;
    EXPECT_EQ(read_file(image), before) << phrase;
  }
}

}  // namespace
}  // namespace capsa::signing
