// `capsa build --encrypt` and running the image with its key, as root and as the test
// user: the layout Apptainer 1.4 writes for its unprivileged encrypted images, round
// trips with a passphrase and with RSA keys, and every failure in one line with nothing
// left mounted or running and the secret nowhere to read.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../runtime/instance_support.hpp"
#include "../runtime/run_support.hpp"
#include "image/squashfs_files.hpp"
#include "sif/image.hpp"
#include "sif/writer.hpp"
#include "squashfs/reader.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime::testing {
namespace {

constexpr const char* kPassphrase = "correct horse battery staple 42";
constexpr const char* kSecretFile = "only inside the encrypted image\n";

// gocryptfs processes of this test: their command line names a directory of the test's
// own (every run below has its session and temporary folders there), so the root and
// user suites, or another checkout's, running at the same time are not counted.
int gocryptfs_processes(const std::string& test_dir) {
  int count = 0;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return -1;
  while (dirent* entry = ::readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream comm("/proc/" + pid + "/comm");
    std::string name;
    std::getline(comm, name);
    if (name != "gocryptfs") continue;
    std::ifstream cmdline("/proc/" + pid + "/cmdline", std::ios::binary);
    const std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find(test_dir) != std::string::npos) ++count;
  }
  ::closedir(proc);
  return count;
}

// The helpers end a moment after capsa (their parent-death signal): waits up to 5 s.
int gocryptfs_processes_after_exit(const std::string& test_dir) {
  for (int i = 0; i < 100; ++i) {
    if (gocryptfs_processes(test_dir) == 0) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return gocryptfs_processes(test_dir);
}

int error_lines(const std::string& err) {
  int n = 0;
  for (const std::string& line : lines_of(err))
    if (!line.empty()) ++n;
  return n;
}

class EncryptedImage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/gocryptfs", X_OK) != 0) GTEST_SKIP() << "gocryptfs is not installed";
    sandbox = make_sandbox(dir, "src", {{"/secret.txt", kSecretFile}});
    std::filesystem::create_directories(dir / "session");
    std::filesystem::create_directories(dir / "tmp");
  }

  // capsa, with the run's session folder (where a run's gocryptfs works) and the build's
  // temporary folder in this test's directory: its gocryptfs processes name it.
  test::ProcessResult capsa(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                            const std::string& stdin_data = "") {
    std::vector<std::string> all = env;
    all.push_back("CAPSA_SESSION_DIR=" + (dir / "session"));
    all.push_back("APPTAINER_TMPDIR=" + (dir / "tmp"));
    return runtime::testing::capsa(args, all, stdin_data);
  }

  std::string build_with_passphrase(const std::string& name) {
    std::string image = dir / name;
    auto built =
        capsa({"build", "--encrypt", image, sandbox}, {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase});
    EXPECT_EQ(built.exit_code, 0) << built.err;
    return image;
  }

  // A PKCS#1 key pair, as Apptainer's documentation makes them (ssh-keygen -m pem).
  void make_keys(const std::string& name) {
    private_key = dir / (name + ".pem");
    public_key = dir / (name + "-pub.pem");
    ASSERT_EQ(test::run_process({"openssl", "genrsa", "-traditional", "-out", private_key, "2048"}).exit_code, 0);
    ASSERT_EQ(
        test::run_process({"openssl", "rsa", "-in", private_key, "-RSAPublicKey_out", "-out", public_key}).exit_code,
        0);
  }

  // Runs `args`, expects one error line naming `expected`, non-zero, and nothing left.
  void expect_clean_failure(const std::vector<std::string>& args, const std::vector<std::string>& env,
                            const std::string& expected, const std::string& stdin_data = "") {
    const std::string mounts_before = mount_table();
    auto result = capsa(args, env, stdin_data);
    EXPECT_NE(result.exit_code, 0) << result.out;
    EXPECT_EQ(error_lines(result.err), 1) << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find(kPassphrase), std::string::npos) << result.err;
    EXPECT_EQ(result.out.find(kSecretFile), std::string::npos);
    EXPECT_EQ(mount_table(), mounts_before);
    EXPECT_EQ(gocryptfs_processes_after_exit(dir.path()), 0);
  }

  test::TempDir dir;
  std::string sandbox, private_key, public_key;
};

TEST_F(EncryptedImage, PassphraseRoundTripFromTheEnvironmentAndStandardInput) {
  const std::string image = build_with_passphrase("pass.sif");
  const std::string mounts_before = mount_table();
  auto ran =
      capsa({"exec", image, "cat", "/secret.txt"}, {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, kSecretFile);
  // --passphrase without a terminal: the first line of standard input; the rest is the command's.
  auto asked = capsa({"exec", "--passphrase", image, "cat"}, {"-u APPTAINER_ENCRYPTION_PASSPHRASE"},
                     std::string(kPassphrase) + "\nthe command's input\n");
  EXPECT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_EQ(asked.out, "the command's input\n");
  // No runscript: run starts /bin/sh with the arguments.
  auto run =
      capsa({"run", image, "-c", "cat /secret.txt"}, {std::string("SINGULARITY_ENCRYPTION_PASSPHRASE=") + kPassphrase});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, kSecretFile);
  EXPECT_EQ(mount_table(), mounts_before);
  EXPECT_EQ(gocryptfs_processes_after_exit(dir.path()), 0);
}

// An instance holds the decrypted image while it runs (its gocryptfs with it), and gives
// everything back when stopped; a wrong key starts nothing.
TEST_F(EncryptedImage, InstanceStartTakesTheKeyAndStopLeavesNothing) {
  const std::string image = build_with_passphrase("instance.sif");
  const std::string name = instance_testing::unique_name("encrypted");
  instance_testing::StopOnExit guard(name);
  const std::string mounts_before = mount_table();
  auto started = capsa({"instance", "start", "--passphrase", image, name}, {"-u APPTAINER_ENCRYPTION_PASSPHRASE"},
                       std::string(kPassphrase) + "\n");
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_EQ(started.err.find(kPassphrase), std::string::npos) << started.err;
  EXPECT_EQ(gocryptfs_processes(dir.path()), 1);
  auto joined = capsa({"exec", "instance://" + name, "cat", "/secret.txt"});
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  EXPECT_EQ(joined.out, kSecretFile);
  auto stopped = capsa({"instance", "stop", name});
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_EQ(mount_table(), mounts_before);
  EXPECT_EQ(gocryptfs_processes_after_exit(dir.path()), 0);

  const std::string refused = instance_testing::unique_name("encrypted");
  instance_testing::StopOnExit refused_guard(refused);
  expect_clean_failure({"instance", "start", image, refused}, {"APPTAINER_ENCRYPTION_PASSPHRASE=not the passphrase"},
                       "wrong passphrase or key");
}

TEST_F(EncryptedImage, BuildAsksForThePassphrase) {
  // No terminal: the first line of standard input, as Apptainer reads it.
  const std::string image = dir / "asked.sif";
  auto built = capsa({"build", "--passphrase", image, sandbox}, {"-u APPTAINER_ENCRYPTION_PASSPHRASE"},
                     std::string(kPassphrase) + "\n");
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_EQ(built.err.find(kPassphrase), std::string::npos);
  auto ran =
      capsa({"exec", image, "cat", "/secret.txt"}, {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, kSecretFile);
}

TEST_F(EncryptedImage, RsaKeyRoundTripWithTheFlagAndTheVariable) {
  make_keys("rsa");
  const std::string image = dir / "pem.sif";
  auto built = capsa({"build", "--pem-path", public_key, image, sandbox});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  auto ran = capsa({"exec", "--pem-path", private_key, image, "cat", "/secret.txt"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, kSecretFile);
  auto from_env = capsa({"exec", image, "cat", "/secret.txt"}, {"APPTAINER_ENCRYPTION_PEM_PATH=" + private_key});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(from_env.out, kSecretFile);
  EXPECT_EQ(gocryptfs_processes_after_exit(dir.path()), 0);
}

// What Apptainer's assembler writes (internal/pkg/build/assemblers/sif.go,
// packer/gocryptfs.go): a primary partition of FsType 6 holding a squashfs with
// gocryptfs.conf and the encrypted squashfs-* file; with an RSA key, a CryptoMessage
// (PEM, RSA-OAEP) linked to the partition.
TEST_F(EncryptedImage, LayoutIsApptainersGocryptfsFormat) {
  make_keys("rsa");
  const std::string image = dir / "layout.sif";
  ASSERT_EQ(capsa({"build", "--pem-path", public_key, image, sandbox}).exit_code, 0);
  sif::Image sif = sif::Image::open(image);
  const sif::Descriptor* primary = sif.primary_partition();
  ASSERT_NE(primary, nullptr);
  EXPECT_EQ(primary->partition().fs_type, sif::FsType::GocryptfsSquashfs);
  int messages = 0;
  for (const sif::Descriptor& d : sif.objects()) {
    if (d.data_type != sif::DataType::CryptoMessage) continue;
    ++messages;
    EXPECT_EQ(d.linked_id(), primary->id);
    EXPECT_FALSE(d.linked_to_group());
    EXPECT_EQ(d.crypto_message().format, sif::FormatType::Pem);
    EXPECT_EQ(d.crypto_message().message, sif::MessageType::RsaOaep);
    EXPECT_TRUE(sif.read_object(d).starts_with("-----BEGIN MESSAGE-----")) << sif.read_object(d);
  }
  EXPECT_EQ(messages, 1);
  image::SquashfsFiles outer(squashfs::Reader(sif.fd(), static_cast<std::uint64_t>(primary->offset),
                                              static_cast<std::uint64_t>(primary->size), "outer"));
  const std::vector<std::string> names = outer.list_directory("/").value_or(std::vector<std::string>{});
  ASSERT_EQ(names.size(), 2u) << ::testing::PrintToString(names);
  EXPECT_NE(std::find(names.begin(), names.end(), "gocryptfs.conf"), names.end());
  const auto inner =
      std::find_if(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("squashfs-"); });
  ASSERT_NE(inner, names.end());
  const std::string conf = outer.read_file("/gocryptfs.conf").value_or("");
  EXPECT_NE(conf.find("\"PlaintextNames\""), std::string::npos) << conf;
  // Ciphertext: the inner file does not start with the squashfs magic.
  EXPECT_FALSE(outer.read_file("/" + *inner, 64 << 20).value_or("hsqs").starts_with("hsqs"));

  // A passphrase image has no CryptoMessage.
  const std::string pass = build_with_passphrase("layout-pass.sif");
  sif::Image pass_sif = sif::Image::open(pass);
  for (const sif::Descriptor& d : pass_sif.objects()) EXPECT_NE(d.data_type, sif::DataType::CryptoMessage);
  // sif list and inspect say what it is without the key.
  auto listed = capsa({"sif", "list", pass});
  EXPECT_NE(listed.out.find("Gocryptfs squashfs"), std::string::npos) << listed.out;
  auto inspected = capsa({"inspect", "--deffile", pass});
  EXPECT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("localimage"), std::string::npos) << inspected.out;
}

TEST_F(EncryptedImage, WrongPassphraseIsOneLineAndLeavesNothing) {
  const std::string image = build_with_passphrase("wrong.sif");
  expect_clean_failure({"exec", image, "cat", "/secret.txt"}, {"APPTAINER_ENCRYPTION_PASSPHRASE=not the passphrase"},
                       "wrong passphrase or key");
}

TEST_F(EncryptedImage, WrongPrivateKeyIsOneLineAndLeavesNothing) {
  make_keys("right");
  const std::string image = dir / "key.sif";
  ASSERT_EQ(capsa({"build", "--pem-path", public_key, image, sandbox}).exit_code, 0);
  make_keys("other");
  expect_clean_failure({"exec", "--pem-path", private_key, image, "true"}, {}, "does not decrypt");
  // A passphrase for an image made for a key is wrong too (gocryptfs refuses it).
  expect_clean_failure({"exec", image, "true"}, {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase},
                       "wrong passphrase or key");
}

TEST_F(EncryptedImage, MissingKeyNamesTheFlags) {
  const std::string image = build_with_passphrase("nokey.sif");
  expect_clean_failure({"exec", image, "true"}, {"-u APPTAINER_ENCRYPTION_PASSPHRASE"}, "--passphrase or --pem-path");
}

TEST_F(EncryptedImage, DamagedPartitionIsOneLineAndLeavesNothing) {
  const std::string image = build_with_passphrase("damaged.sif");
  const sif::Descriptor primary = *sif::Image::open(image).primary_partition();
  // Ciphertext changed in the middle of the inner image: gocryptfs' authentication fails.
  {
    std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(primary.offset + primary.size / 2);
    const std::string junk(16384, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  const std::vector<std::string> env = {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase};
  const std::string mounts_before = mount_table();
  auto result = capsa({"exec", image, "sh", "-c", "cat /bin/* /secret.txt > /dev/null"}, env);
  // The damage lies in file data or in the image's tables: the run fails either way,
  // in one line when it is found before the command starts.
  EXPECT_NE(result.exit_code, 0) << result.err;
  EXPECT_EQ(mount_table(), mounts_before);
  EXPECT_EQ(gocryptfs_processes_after_exit(dir.path()), 0);
  // Truncated inside the partition: refused before anything is mounted.
  ASSERT_EQ(::truncate(image.c_str(), primary.offset + primary.size / 3), 0);
  expect_clean_failure({"exec", image, "true"}, env, image);
}

// Apptainer's root and setuid format (LUKS2 through dm-crypt, FsType 5) needs a device
// mapper: refused in one line naming the way out, before any key is asked for.
TEST_F(EncryptedImage, Luks2ImageIsRefusedInOneLine) {
  const std::string luks = dir.write("luks2.img", std::string("LUKS\xba\xbe\0\x02", 8) + std::string(1 << 16, '\0'));
  const std::string image = dir / "luks2.sif";
  sif::create(image, {}, {sif::partition_input(luks, sif::FsType::EncryptedSquashfs, sif::PartType::PrimSys, "amd64")});
  expect_clean_failure({"exec", image, "true"}, {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase},
                       "LUKS2");
  expect_clean_failure({"exec", image, "true"}, {"-u APPTAINER_ENCRYPTION_PASSPHRASE"}, "capsa build --encrypt");
}

// Neither the passphrase nor the random secret is on any command line or in any
// environment a process of the run shows, seen from inside the running container.
TEST_F(EncryptedImage, TheSecretIsInNoProcessCommandLineOrEnvironment) {
  const std::string image = build_with_passphrase("ps.sif");
  const std::string scan =
      "for p in /proc/[0-9]*; do cat $p/cmdline $p/environ 2>/dev/null; echo; done; "
      "grep -c gocryptfs /proc/[0-9]*/cmdline 2>/dev/null | grep -v ':0' | wc -l";
  auto ran = capsa({"exec", image, "sh", "-c", scan}, {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out.find(kPassphrase), std::string::npos);
  // The scan saw the run's own gocryptfs, so it looked where the secret would have been.
  EXPECT_NE(ran.out.find("gocryptfs"), std::string::npos);
}

TEST_F(EncryptedImage, AdministratorCanForbidEncryptedImages) {
  const std::string image = build_with_passphrase("forbidden.sif");
  const std::string config = dir.write("capsa.conf", "allow container encrypted = no\n");
  expect_clean_failure({"exec", image, "true"},
                       {"CAPSA_CONFIG=" + config, std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase},
                       "allow container encrypted = no");
}

TEST_F(EncryptedImage, SignedAndVerifiedAsAnyImage) {
  const std::string image = build_with_passphrase("signed.sif");
  const std::string key = dir / "signer.pem", pub = dir / "signer-pub.pem";
  ASSERT_EQ(test::run_process({"openssl", "genpkey", "-algorithm", "ed25519", "-out", key}).exit_code, 0);
  ASSERT_EQ(test::run_process({"openssl", "pkey", "-in", key, "-pubout", "-out", pub}).exit_code, 0);
  auto signed_ = capsa({"sign", "--key", key, image});
  ASSERT_EQ(signed_.exit_code, 0) << signed_.err;
  auto verified = capsa({"verify", "--key", pub, image});
  EXPECT_EQ(verified.exit_code, 0) << verified.err;
  auto ran =
      capsa({"exec", image, "cat", "/secret.txt"}, {std::string("APPTAINER_ENCRYPTION_PASSPHRASE=") + kPassphrase});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, kSecretFile);
  // A changed partition no longer verifies.
  const sif::Descriptor primary = *sif::Image::open(image).primary_partition();
  {
    std::fstream f(image, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(primary.offset + primary.size / 2);
    f.put('\x01');
  }
  EXPECT_NE(capsa({"verify", "--key", pub, image}).exit_code, 0);
}

TEST_F(EncryptedImage, BuildRefusesAMissingKeyAndWarnsAboutAnUnusedOne) {
  auto no_key = capsa({"build", "--encrypt", dir / "x.sif", sandbox}, {"-u APPTAINER_ENCRYPTION_PASSPHRASE"});
  EXPECT_NE(no_key.exit_code, 0);
  EXPECT_NE(no_key.err.find("--encrypt needs a key"), std::string::npos) << no_key.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.sif"));
  auto plain = capsa({"build", dir / "plain.sif", sandbox}, {"APPTAINER_ENCRYPTION_PASSPHRASE=unused"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.err.find("NOT encrypting"), std::string::npos) << plain.err;
  EXPECT_EQ(sif::Image::open(dir / "plain.sif").primary_partition()->partition().fs_type, sif::FsType::Squashfs);
}

}  // namespace
}  // namespace capsa::runtime::testing
