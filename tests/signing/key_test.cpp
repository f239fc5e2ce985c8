// capsa key newpair/list/export/import/remove in a private HOME, and the keys moving to
// and from GnuPG and Apptainer's keyring files; --global on an installation of the test's
// own (config/site_prefix.hpp), and pass-phrases given with -P or renewed on import.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../config/site_prefix.hpp"
#include "keyring_sandbox.hpp"
#include "support/process.hpp"
#include "support/test_env.hpp"
#include "support/unprivileged.hpp"

namespace capsa::signing {
namespace {

using test::KeyringSandbox;
using test::read_file;
using test::run_process;

test::ProcessResult capsa(const std::vector<std::string>& args, const std::string& input = "") {
  return test::run_capsa(args, input);
}

int lines(const std::string& text) { return test::line_count(text); }

std::string fingerprint_in(const std::string& listing) {
  const auto at = listing.find("Fingerprint:       ");
  return at == std::string::npos ? "" : listing.substr(at + 19, 40);
}

TEST(Key, NewpairListExportRemoveImportRoundTrip) {
  KeyringSandbox sandbox;
  const std::string secret = "pass phrase 42";
  auto made = capsa({"key", "newpair", "--name", "Key Test", "--email", "key@example.org", "--comment", "ci",
                     "--bit-length", "2048", "--password-stdin"},
                    secret + "\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(made.out.find(secret), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(sandbox.keys_directory()));
  EXPECT_EQ(std::filesystem::status(sandbox.keys_directory()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);

  auto listed = capsa({"key", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("Public key listing (" + sandbox.keys_directory() + "):\n\n0)  User:              Key Test "
                            "(ci) <key@example.org>\n    Creation time:     "),
            std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("    Length (in bits):  2048\n"), std::string::npos) << listed.out;
  const std::string fingerprint = fingerprint_in(listed.out);
  ASSERT_EQ(fingerprint.size(), 40u);
  EXPECT_NE(capsa({"key", "list", "--secret"}).out.find(fingerprint), std::string::npos);

  // Export, armored: what GnuPG itself reads.
  const std::string public_file = sandbox.dir() / "public.asc", secret_file = sandbox.dir() / "secret.asc";
  auto exported = capsa({"key", "export", "--armor", public_file});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(exported.out, "Public key with fingerprint " + fingerprint + " correctly exported to file: " + public_file + "\n");
  EXPECT_TRUE(read_file(public_file).starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----"));
  auto wrong = capsa({"key", "export", "--secret", "--armor", "--password-stdin", secret_file}, "not it\n");
  EXPECT_NE(wrong.exit_code, 0);
  EXPECT_EQ(lines(wrong.err), 1) << wrong.err;
  auto exported_secret = capsa({"key", "export", "--secret", "--armor", "--password-stdin", secret_file}, secret + "\n");
  ASSERT_EQ(exported_secret.exit_code, 0) << exported_secret.err;
  EXPECT_TRUE(read_file(secret_file).starts_with("-----BEGIN PGP PRIVATE KEY BLOCK-----"));
  const std::string binary_file = sandbox.dir() / "secret.gpg";
  ASSERT_EQ(capsa({"key", "export", "-s", "--password-stdin", binary_file}, secret + "\n").exit_code, 0);
  EXPECT_FALSE(read_file(binary_file).starts_with("-----BEGIN"));
  EXPECT_EQ(std::filesystem::status(secret_file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  {
    test::TempDir gnupg;
    auto imported = run_process({"gpg", "--batch", "--homedir", gnupg.path(), "--import", public_file});
    EXPECT_EQ(imported.exit_code, 0) << imported.err;
    run_process({"gpgconf", "--homedir", gnupg.path(), "--kill", "gpg-agent"});
  }

  // Removing: the public key alone is refused while its secret key is there.
  auto refused = capsa({"key", "remove", fingerprint});
  EXPECT_NE(refused.err.find("remove both with --both"), std::string::npos) << refused.err;
  auto removed = capsa({"key", "remove", "--both", fingerprint});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(fingerprint_in(capsa({"key", "list"}).out), "");
  EXPECT_EQ(fingerprint_in(capsa({"key", "list", "--secret"}).out), "");

  // Importing the exported secret key brings back both halves, and it still signs. A
  // binary export (what Apptainer's pgp-secret holds) imports as well as an armored one.
  ASSERT_EQ(capsa({"key", "import", "--password-stdin", binary_file}, secret + "\n").exit_code, 0);
  EXPECT_EQ(fingerprint_in(capsa({"key", "list", "--secret"}).out), fingerprint);
  ASSERT_EQ(capsa({"key", "remove", "--both", fingerprint}).exit_code, 0);
  auto imported = capsa({"key", "import", "--password-stdin", secret_file}, secret + "\n");
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(imported.out.find("Key with fingerprint " + fingerprint + " successfully added to the private keyring"),
            std::string::npos)
      << imported.out;
  EXPECT_EQ(fingerprint_in(capsa({"key", "list", "--secret"}).out), fingerprint);
  const std::string image = sandbox.copy_fixture("images/one-group.sif", "signed.sif");
  auto signed_ = capsa({"sign", "--password-stdin", image}, secret + "\n");
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;
  EXPECT_EQ(capsa({"verify", image}).exit_code, 0);

  // --secret removes the secret half only; verification still works with the public half.
  ASSERT_EQ(capsa({"key", "remove", "--secret", fingerprint}).exit_code, 0);
  EXPECT_EQ(fingerprint_in(capsa({"key", "list", "--secret"}).out), "");
  EXPECT_EQ(fingerprint_in(capsa({"key", "list"}).out), fingerprint);
  EXPECT_EQ(capsa({"verify", image}).exit_code, 0);
  ASSERT_EQ(capsa({"key", "remove", "--public", fingerprint}).exit_code, 0);
  auto unknown = capsa({"verify", image});
  EXPECT_NE(unknown.err.find("which is not in the keyring"), std::string::npos) << unknown.err;
}

TEST(Key, UpstreamKeyImportsAndApptainersKeyringIsTrusted) {
  KeyringSandbox sandbox;
  const std::string image = test::sif_fixture("images/one-group-signed-pgp.sif");
  EXPECT_NE(capsa({"verify", image}).exit_code, 0);
  // Apptainer's own keyring file (binary OpenPGP keys) counts without importing.
  const std::string apptainer_keys = sandbox.dir() / "home/.apptainer/keys";
  std::filesystem::create_directories(apptainer_keys);
  {
    test::TempDir gnupg;
    run_process({"gpg", "--batch", "--homedir", gnupg.path(), "--import", test::sif_fixture("keys/pgp-public.asc")});
    auto binary = run_process({"gpg", "--batch", "--homedir", gnupg.path(), "--export", test::kUpstreamPgpFingerprint});
    std::ofstream(apptainer_keys + "/pgp-public", std::ios::binary) << binary.out;
    run_process({"gpgconf", "--homedir", gnupg.path(), "--kill", "gpg-agent"});
  }
  auto trusted = capsa({"verify", image});
  EXPECT_EQ(trusted.exit_code, 0) << trusted.err;
  std::filesystem::remove(apptainer_keys + "/pgp-public");
  auto imported = capsa({"key", "import", test::sif_fixture("keys/pgp-public.asc")});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(imported.out, std::string("Key with fingerprint ") + test::kUpstreamPgpFingerprint +
                              " successfully added to the public keyring\n");
  // --local: the key is in the keyring, so no keyserver would be asked anyway.
  auto verified = capsa({"verify", "--local", image});
  ASSERT_EQ(verified.exit_code, 0) << verified.err;
  // Apptainer's layout, line for line.
  EXPECT_EQ(verified.out,
            "[LOCAL]            Signing entity: Unit Test\n"
            "[LOCAL]            Fingerprint: 12045C8C0B1004D058DE4BEDA20C27EE7FF7BA84\n"
            "Objects verified:\n"
            "ID  |GROUP   |LINK    |TYPE\n"
            "------------------------------------------------\n"
            "1   |1       |NONE    |FS\n"
            "2   |1       |NONE    |FS\n");
  EXPECT_EQ(verified.err, "INFO:    Verified signature(s) from image '" + image + "'\n");
  auto json = capsa({"-q", "verify", "--json", image});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out,
            "{\n"
            "  \"Signatures\": 1,\n"
            "  \"SignerKeys\": [\n"
            "    {\n"
            "      \"Signer\": {\n"
            "        \"Partition\": \"FS\",\n"
            "        \"Name\": \"Unit Test\",\n"
            "        \"Fingerprint\": \"12045c8c0b1004d058de4beda20c27ee7ff7ba84\",\n"
            "        \"KeyLocal\": true,\n"
            "        \"KeyCheck\": true,\n"
            "        \"DataCheck\": true\n"
            "      }\n"
            "    },\n"
            "    {\n"
            "      \"Signer\": {\n"
            "        \"Partition\": \"FS\",\n"
            "        \"Name\": \"Unit Test\",\n"
            "        \"Fingerprint\": \"12045c8c0b1004d058de4beda20c27ee7ff7ba84\",\n"
            "        \"KeyLocal\": true,\n"
            "        \"KeyCheck\": true,\n"
            "        \"DataCheck\": true\n"
            "      }\n"
            "    }\n"
            "  ]\n"
            "}\n");
}

TEST(Key, KeysdirChoosesTheKeyring) {
  KeyringSandbox sandbox;
  const std::string elsewhere = sandbox.dir() / "elsewhere";
  auto imported = capsa({"key", "import", "-d", elsewhere, test::sif_fixture("keys/pgp-public.asc")});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_NE(capsa({"key", "list", "--keysdir", elsewhere}).out.find(test::kUpstreamPgpFingerprint), std::string::npos);
  EXPECT_EQ(capsa({"key", "list"}).out.find(test::kUpstreamPgpFingerprint), std::string::npos);
  const std::string exported = sandbox.dir() / "exported.asc";
  EXPECT_EQ(capsa({"key", "export", "-d", elsewhere, "-a", exported}).exit_code, 0);
  EXPECT_EQ(capsa({"key", "remove", "-d", elsewhere, test::kUpstreamPgpFingerprint}).exit_code, 0);
  EXPECT_EQ(capsa({"key", "list", "-d", elsewhere}).out.find(test::kUpstreamPgpFingerprint), std::string::npos);
  ASSERT_EQ(capsa({"key", "newpair", "-d", elsewhere, "-N", "E", "-E", "e@x", "-b", "2048", "--password-stdin"}, "")
                .exit_code,
            0);
  EXPECT_NE(capsa({"key", "list", "-s", "-d", elsewhere}).out.find("User:              E () <e@x>"), std::string::npos);
  run_process({"gpgconf", "--homedir", elsewhere, "--kill", "gpg-agent"});
}

// The installed capsa of the suite's own prefix, `input` on its standard input.
test::ProcessResult site_capsa(const std::vector<std::string>& args, const std::string& input = "") {
  std::vector<std::string> argv = {config::testing::SitePrefix::get().path() + "/bin/capsa"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, input);
}

// Stops the keyring's gpg-agent, so that no pass-phrase it cached answers for the next command.
void forget_passphrases(const KeyringSandbox& sandbox) {
  run_process({"gpgconf", "--homedir", sandbox.keys_directory(), "--kill", "gpg-agent"});
}

TEST(Key, GlobalKeyringIsChangedByItsOwnerAndTrustedByVerify) {
  KeyringSandbox sandbox;
  const std::string global = config::testing::SitePrefix::get().path() + "/etc/capsa/global-pgp-public";
  std::filesystem::remove(global);
  const std::string image = test::sif_fixture("images/one-group-signed-pgp.sif");
  auto empty = site_capsa({"key", "list", "--global"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_EQ(empty.out, "Public key listing (" + global + "):\n\n");
  EXPECT_NE(site_capsa({"verify", "--local", image}).exit_code, 0);

  // The suite made this installation, so its user may change its keyring (as root may).
  auto imported = site_capsa({"key", "import", "-g", test::sif_fixture("keys/pgp-public.asc")});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(imported.out, std::string("Key with fingerprint ") + test::kUpstreamPgpFingerprint +
                              " successfully added to the global keyring " + global + "\n");
  EXPECT_EQ(std::filesystem::status(global).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  // Binary OpenPGP keys, as Apptainer's global-pgp-public: GnuPG reads the file.
  EXPECT_FALSE(read_file(global).starts_with("-----BEGIN"));
  {
    test::TempDir gnupg;
    auto read = run_process({"gpg", "--batch", "--homedir", gnupg.path(), "--import", global});
    EXPECT_EQ(read.exit_code, 0) << read.err;
    run_process({"gpgconf", "--homedir", gnupg.path(), "--kill", "gpg-agent"});
  }
  auto listed = site_capsa({"key", "list", "-g"});
  EXPECT_EQ(listed.out.rfind("Public key listing (" + global + "):\n\n0)  User:              Unit Test", 0), 0u)
      << listed.out;
  EXPECT_EQ(fingerprint_in(listed.out), test::kUpstreamPgpFingerprint);
  EXPECT_EQ(fingerprint_in(site_capsa({"key", "list"}).out), "") << "the user's keyring got the key";

  // verify trusts the administrator's keys, with nothing in the user's keyring.
  auto verified = site_capsa({"verify", "--local", image});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  EXPECT_NE(verified.out.find(std::string("Fingerprint: ") + test::kUpstreamPgpFingerprint), std::string::npos);

  const std::string exported = sandbox.dir() / "global.asc";
  auto out = site_capsa({"key", "export", "--global", "--armor", exported});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_TRUE(read_file(exported).starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----"));

  // A secret key never goes into it, and the file stays as it was.
  const std::string before = read_file(global);
  ASSERT_EQ(capsa({"key", "newpair", "-N", "S", "-E", "s@x", "-b", "2048", "--password-stdin"}, "\n").exit_code, 0);
  const std::string secret_file = sandbox.dir() / "secret.asc";
  ASSERT_EQ(capsa({"key", "export", "--secret", "--armor", "--password-stdin", secret_file}, "\n").exit_code, 0);
  auto refused = site_capsa({"key", "import", "--global", secret_file});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(lines(refused.err), 1) << refused.err;
  EXPECT_NE(refused.err.find("holds public keys only"), std::string::npos) << refused.err;
  EXPECT_EQ(read_file(global), before);

  // Someone who owns neither this installation nor the configured one is told to be root.
  if (::geteuid() != 0 || test::test_user()) {
    const std::string key_file = test::sif_fixture("keys/pgp-public.asc");
    const int status = test::run_as_test_user([&] {
      test::ChildChecks checks;
      for (const std::vector<std::string>& args :
           {std::vector<std::string>{"key", "import", "--global", key_file},
            std::vector<std::string>{"key", "remove", "--global", test::kUpstreamPgpFingerprint}}) {
        std::vector<std::string> argv = {"env", "HOME=/tmp", test::capsa_binary()};
        argv.insert(argv.end(), args.begin(), args.end());
        auto denied = run_process(argv);
        checks.expect(denied.exit_code == 1, args[1] + ": exit " + std::to_string(denied.exit_code) + " " + denied.err);
        checks.expect(lines(denied.err) == 1 && denied.err.find("run it as root") != std::string::npos, denied.err);
      }
      return checks.report();
    });
    EXPECT_EQ(status, 0);
  }

  auto removed = site_capsa({"key", "remove", "--global", test::kUpstreamPgpFingerprint});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_EQ(fingerprint_in(site_capsa({"key", "list", "-g"}).out), "");
  EXPECT_NE(site_capsa({"verify", "--local", image}).exit_code, 0);
}

TEST(Key, ImportNewPasswordProtectsTheSecretKeyWithTheNewPassPhrase) {
  KeyringSandbox sandbox;
  const std::string image = sandbox.copy_fixture("images/one-group.sif", "signed.sif");
  // A protected key (the old pass-phrase first on stdin), then an unprotected one (an empty line).
  for (const std::string& old_phrase : {std::string("old phrase"), std::string()}) {
    auto made =
        capsa({"key", "newpair", "-N", "Renew", "-E", "r@x", "-b", "2048", "--password-stdin"}, old_phrase + "\n");
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const std::string fingerprint = fingerprint_in(capsa({"key", "list", "--secret"}).out);
    const std::string file = sandbox.dir() / "renew.gpg";
    ASSERT_EQ(capsa({"key", "export", "--secret", "--password-stdin", file}, old_phrase + "\n").exit_code, 0);
    ASSERT_EQ(capsa({"key", "remove", "--both", fingerprint}).exit_code, 0);

    auto one_line = capsa({"key", "import", "--new-password", "--password-stdin", file}, old_phrase);
    EXPECT_EQ(one_line.exit_code, 1);
    EXPECT_NE(one_line.err.find("reads two lines"), std::string::npos) << one_line.err;
    auto imported = capsa({"key", "import", "--new-password", "--password-stdin", file}, old_phrase + "\nnew phrase\n");
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
    EXPECT_NE(imported.out.find("successfully added to the private keyring"), std::string::npos) << imported.out;
    EXPECT_EQ((imported.out + imported.err).find("new phrase"), std::string::npos);

    forget_passphrases(sandbox);
    auto with_old = capsa({"sign", "--password-stdin", image}, old_phrase + "\n");
    EXPECT_NE(with_old.exit_code, 0) << "the old pass-phrase still unlocks the key";
    forget_passphrases(sandbox);
    auto with_new = capsa({"sign", "--password-stdin", image}, "new phrase\n");
    EXPECT_EQ(with_new.exit_code, 0) << with_new.err;
    ASSERT_EQ(capsa({"key", "remove", "--both", fingerprint}).exit_code, 0);
  }
}

TEST(Key, NewpairPasswordFlagProtectsTheKey) {
  KeyringSandbox sandbox;
  const std::string phrase = "flag phrase " + std::to_string(::getpid());
  auto made = capsa({"key", "newpair", "-N", "Flag", "-E", "f@x", "-b", "2048", "-P", phrase});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ((made.out + made.err).find(phrase), std::string::npos);
  const std::string image = sandbox.copy_fixture("images/one-group.sif", "signed.sif");
  forget_passphrases(sandbox);
  EXPECT_NE(capsa({"sign", "--password-stdin", image}, "\n").exit_code, 0) << "the key has no pass-phrase";
  forget_passphrases(sandbox);
  auto signed_ = capsa({"sign", "--password-stdin", image}, phrase + "\n");
  EXPECT_EQ(signed_.exit_code, 0) << signed_.err;
  // --password=VALUE too.
  ASSERT_EQ(capsa({"key", "newpair", "-N", "Eq", "-E", "e@x", "-b", "2048", "--password=" + phrase}).exit_code, 0);
}

TEST(Key, BadInputIsOneLineAndPassPhrasesStayOffTheCommandLine) {
  KeyringSandbox sandbox;
  const std::string not_a_key = sandbox.dir().write("not-a-key.txt", "hello\n");
  for (const auto& [args, phrase] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"key", "import", not_a_key}, "not-a-key.txt: no OpenPGP key found"},
           {{"key", "import", sandbox.dir() / "missing.asc"}, "missing.asc: cannot read the key file"},
           {{"key", "export", sandbox.dir() / "out.asc"}, "the keyring holds no public key"},
           {{"key", "remove", "0123456789ABCDEF0123456789ABCDEF01234567"}, "the keyring holds no public key"},
           {{"key", "newpair", "-N", "A", "-E", "a@b", "-P", "hunter2", "--password-stdin"}, "--password"},
           {{"key", "pull", "someone"}, "\"someone\" is no key"},
           {{"key", "list", "--global", "--secret"}, "the global keyring holds public keys only"},
           {{"key", "export", "--global", "--secret", sandbox.dir() / "g.asc"}, "the global keyring holds public keys"},
           {{"key", "remove", "--global", "--both", "0123456789ABCDEF0123456789ABCDEF01234567"}, "public keys only"},
           {{"key", "import", "--global", "--new-password", not_a_key}, "--new-password"},
       }) {
    auto result = capsa(args);
    EXPECT_EQ(result.exit_code, 1) << phrase << ": " << result.err;
    EXPECT_EQ(lines(result.err), 1) << result.err;
    EXPECT_NE(result.err.find(phrase), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("hunter2"), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "") << phrase;
  }
  // No terminal and no --password-stdin: newpair says how to give one, and makes nothing.
  auto no_tty = run_process({"setsid", test::capsa_binary(), "key", "newpair", "-N", "A", "-E", "a@b"});
  EXPECT_NE(no_tty.err.find("--password-stdin"), std::string::npos) << no_tty.err;
}

}  // namespace
}  // namespace capsa::signing
