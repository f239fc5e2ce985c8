// The squashfs reader against real images: the upstream SIF fixtures, the busybox
// image built by Singularity 3.8.1, and tests/fixtures/make-inspect-image.sh (symlink
// cases). Expected contents were checked with rdsquashfs/unsquashfs.
#include "squashfs/reader.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <array>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "oci/digest.hpp"
#include "sif/image.hpp"
#include "support/temp_dir.hpp"
#include "support/test_env.hpp"
#include "util/error.hpp"
#include "util/fd.hpp"

namespace capsa::squashfs {
namespace {

using Names = std::vector<std::string>;
using test::TempDir;

// A whole file opened as one squashfs image.
struct FileImage {
  explicit FileImage(const std::string& path)
      : fd(open_file(path, O_RDONLY)), reader(fd.get(), 0, file_size(fd.get()), path) {}
  UniqueFd fd;
  Reader reader;
};

// The primary partition of a SIF.
struct SifImage {
  explicit SifImage(const std::string& path) : image(sif::Image::open(path)), reader(open(image)) {}
  static Reader open(const sif::Image& image) {
    const sif::Descriptor* d = image.primary_partition();
    if (d == nullptr) throw Error("no primary partition in the fixture");
    return Reader(image.fd(), static_cast<std::uint64_t>(d->offset), static_cast<std::uint64_t>(d->size),
                  image.path() + ": primary partition");
  }
  sif::Image image;
  Reader reader;
};

std::string built_image() { return test::built_fixtures() + "/inspect-image/rootfs.squashfs"; }

std::string sha256_hex(const std::string& data) { return oci::Digest::sha256_of(data).hex(); }

// Runs `body`, which must throw FormatError whose message contains `phrase`.
template <typename Body>
void expect_format_error(Body&& body, const std::string& phrase) {
  try {
    body();
    ADD_FAILURE() << "no FormatError; expected one mentioning \"" << phrase << "\"";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

TEST(SquashfsMagic, RecognisesSquashfsOnly) {
  UniqueFd squash = open_file(test::sif_fixture("input/root.squashfs"), O_RDONLY);
  UniqueFd ext3 = open_file(test::sif_fixture("input/root.ext3"), O_RDONLY);
  UniqueFd sif = open_file(test::sif_fixture("images/one-group.sif"), O_RDONLY);
  EXPECT_TRUE(has_squashfs_magic(squash.get(), 0));
  EXPECT_FALSE(has_squashfs_magic(squash.get(), 1));
  EXPECT_FALSE(has_squashfs_magic(squash.get(), 4094));  // only 2 bytes left
  EXPECT_FALSE(has_squashfs_magic(squash.get(), 1 << 20));
  EXPECT_FALSE(has_squashfs_magic(ext3.get(), 0));
  EXPECT_TRUE(has_squashfs_magic(sif.get(), 36864));
  EXPECT_FALSE(has_squashfs_magic(sif.get(), 32768));
}

TEST(SquashfsReader, ReadsUpstreamRootSquashfs) {
  FileImage img(test::sif_fixture("input/root.squashfs"));
  EXPECT_EQ(img.reader.read_file("/hello.txt"), "Hello from Sylabs!\n");
  EXPECT_EQ(img.reader.list_directory("/"), Names{"hello.txt"});
  EXPECT_EQ(img.reader.list_directory(""), Names{"hello.txt"});
  // Paths are always taken from the image root; "." and ".." never leave it.
  for (const char* path : {"hello.txt", "//hello.txt", "/./hello.txt", "/../../hello.txt", "/hello.txt/"})
    EXPECT_EQ(img.reader.read_file(path), "Hello from Sylabs!\n") << path;
  EXPECT_EQ(img.reader.read_file("/missing"), std::nullopt);
  EXPECT_EQ(img.reader.read_file("/hello.txt/more"), std::nullopt);
  EXPECT_EQ(img.reader.read_file("/"), std::nullopt);  // a directory is not a file
  EXPECT_EQ(img.reader.list_directory("/hello.txt"), std::nullopt);
  EXPECT_EQ(img.reader.list_directory("/missing"), std::nullopt);
  EXPECT_EQ(img.reader.read_file(std::string("/hello.txt\0x", 12)), std::nullopt);
}

TEST(SquashfsReader, ReadsPartitionInsideSif) {
  for (const char* name : {"images/one-group.sif", "images/two-groups.sif"}) {
    SifImage img(test::sif_fixture(name));
    EXPECT_EQ(img.reader.read_file("/hello.txt"), "Hello from Sylabs!\n") << name;
    EXPECT_EQ(img.reader.label(), img.image.path() + ": primary partition");
  }
}

TEST(SquashfsReader, RefusesTheExt3Partition) {
  sif::Image image = sif::Image::open(test::sif_fixture("images/two-groups.sif"));
  const sif::Descriptor& ext3 = image.object(3);
  expect_format_error(
      [&] { Reader(image.fd(), static_cast<std::uint64_t>(ext3.offset), static_cast<std::uint64_t>(ext3.size),
                   "two-groups.sif: object 3"); },
      "two-groups.sif: object 3: squashfs super block: bad magic");
}

TEST(SquashfsReader, ReadsBusyboxMetadata) {
  SifImage img(test::sif_fixture("real/busybox_amd64.sif"));
  const Reader& r = img.reader;
  EXPECT_EQ(r.list_directory("/.singularity.d"),
            (Names{"Singularity", "actions", "env", "labels.json", "libs", "runscript", "startscript"}));
  EXPECT_EQ(r.list_directory("/.singularity.d/env"),
            (Names{"01-base.sh", "10-docker2singularity.sh", "90-environment.sh", "94-appsbase.sh", "95-apps.sh",
                   "99-base.sh", "99-runtimevars.sh"}));
  EXPECT_EQ(r.list_directory("/.singularity.d/libs"), Names{});
  EXPECT_EQ(r.read_file("/.singularity.d/Singularity"), "BootStrap: docker\nFrom: busybox:1.33.1\n");
  EXPECT_EQ(r.read_file("/.singularity.d/startscript"), "#!/bin/sh\n");
  EXPECT_EQ(r.read_file("/.singularity.d/env/10-docker2singularity.sh"),
            "#!/bin/sh\nexport PATH=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"\n");
  EXPECT_EQ(r.read_file("/.singularity.d/env/90-environment.sh"),
            "#!/bin/sh\n# Custom environment shell code should follow\n\n");
  EXPECT_EQ(r.read_file("/.singularity.d/env/94-appsbase.sh"), "");
  EXPECT_EQ(r.read_file("/.singularity.d/labels.json"),
            "{\n"
            "\t\"org.label-schema.build-arch\": \"amd64\",\n"
            "\t\"org.label-schema.build-date\": \"Monday_2_August_2021_14:9:36_CDT\",\n"
            "\t\"org.label-schema.schema-version\": \"1.0\",\n"
            "\t\"org.label-schema.usage.singularity.deffile.bootstrap\": \"docker\",\n"
            "\t\"org.label-schema.usage.singularity.deffile.from\": \"busybox:1.33.1\",\n"
            "\t\"org.label-schema.usage.singularity.version\": \"3.8.1\"\n"
            "}");
  auto runscript = r.read_file("/.singularity.d/runscript");
  ASSERT_TRUE(runscript);
  EXPECT_EQ(runscript->size(), 1077u);
  EXPECT_TRUE(runscript->starts_with("#!/bin/sh\nOCI_ENTRYPOINT=''\nOCI_CMD='\"sh\"'\nCMDLINE_ARGS=\"\"\n"));
  EXPECT_TRUE(runscript->ends_with("\neval \"set ${SINGULARITY_OCI_RUN}\"\nexec \"$@\"\n\n"));
  // Root-level symlinks into /.singularity.d.
  EXPECT_EQ(r.read_file("/singularity"), runscript);
  EXPECT_EQ(r.read_file("/environment"), r.read_file("/.singularity.d/env/90-environment.sh"));
  EXPECT_EQ(r.read_file("/.run"), r.read_file("/.singularity.d/actions/run"));
}

TEST(SquashfsReader, ReadsMultiBlockFiles) {
  SifImage img(test::sif_fixture("real/busybox_amd64.sif"));
  // 1149184 bytes in nine 128 KiB gzip blocks, no fragment; checked with rdsquashfs.
  auto busybox = img.reader.read_file("/bin/busybox");
  ASSERT_TRUE(busybox);
  EXPECT_EQ(busybox->size(), 1149184u);
  EXPECT_EQ(sha256_hex(*busybox), "495a05eb2c12ed3e75a73c971b1646e9936aa30e111bdeff1328e2aa341f0e01");
  EXPECT_EQ(img.reader.read_file("/bin/sh"), busybox);  // a hard link
  expect_format_error([&] { img.reader.read_file("/bin/busybox", 1149183); },
                      "/bin/busybox is too large (1149184 bytes, limit 1149183)");
  EXPECT_EQ(img.reader.read_file("/bin/busybox", 1149184)->size(), 1149184u);
}

TEST(SquashfsReader, FollowsSymlinksInsideTheImage) {
  FileImage img(built_image());
  const Reader& r = img.reader;
  // Relative through a directory, absolute (resolved at the image root), in the middle of a path.
  EXPECT_EQ(r.read_file("/.singularity.d/runscript.help"), "Inspect fixture.\nSecond line of help.\n");
  EXPECT_EQ(r.read_file("/.singularity.d/env/91-environment.sh"), "export HELLO=\"world\"\n");
  EXPECT_EQ(r.read_file("/singularity"), r.read_file("/.singularity.d/runscript"));
  EXPECT_EQ(r.read_file("/meta/runscript"), r.read_file("/.singularity.d/runscript"));
  EXPECT_EQ(r.list_directory("/meta/help"), Names{"runscript.txt"});
  EXPECT_EQ(r.read_file("/meta/../hello.txt"), "Hello from capsa!\n");
  // "../../../../../hello.txt" from /.singularity.d stops at the image root.
  EXPECT_EQ(r.read_file("/.singularity.d/up"), "Hello from capsa!\n");
  // Targets that exist only on the host are not followed there.
  EXPECT_EQ(r.read_file("/etc/host-link"), std::nullopt);
  EXPECT_EQ(r.read_file("/.singularity.d/env/95-dangling-environment.sh"), std::nullopt);
  expect_format_error([&] { r.read_file("/.singularity.d/loop"); },
                      built_image() + ": /.singularity.d/loop: too many levels of symbolic links");
  expect_format_error([&] { r.list_directory("/.singularity.d/loop/x"); }, "too many levels of symbolic links");
}

TEST(SquashfsReader, ReadsBlocksAndFragmentsAndEmptyFiles) {
  FileImage img(built_image());
  std::string expected;
  for (int i = 1; i <= 60000; ++i) expected += std::to_string(i) + "\n";
  EXPECT_EQ(img.reader.read_file("/big.txt"), expected);
  EXPECT_EQ(img.reader.read_file("/empty"), "");
  EXPECT_EQ(img.reader.read_file("/hello.txt", 18), "Hello from capsa!\n");
  expect_format_error([&] { img.reader.read_file("/hello.txt", 17); }, "/hello.txt is too large");
  EXPECT_EQ(img.reader.list_directory("/"),
            (Names{".singularity.d", "big.txt", "bin", "empty", "etc", "hello.txt", "meta", "singularity"}));
}

TEST(SquashfsReaderBadInput, RejectsNonSquashfsData) {
  TempDir dir;
  std::string garbage(8192, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919 + 13) % 251);
  expect_format_error([&] { FileImage(dir.write("garbage", garbage)); }, "bad magic, not a squashfs image");
  expect_format_error([&] { FileImage(dir.write("tiny", "hsqs")); }, "4 bytes is too small for a squashfs image");
  expect_format_error([&] { FileImage(dir.write("empty", "")); }, "0 bytes is too small");
  std::string fake = garbage;
  fake.replace(0, 4, "hsqs");
  expect_format_error([&] { FileImage(dir.write("fake", fake)); }, "fake: squashfs super block:");
}

TEST(SquashfsReaderBadInput, RejectsTruncatedImages) {
  TempDir dir;
  std::string image = test::read_file(test::sif_fixture("input/root.squashfs"));
  // The super block says 249 bytes are used (then padding to 4096); cut into the tables.
  expect_format_error([&] { FileImage(dir.write("cut", image.substr(0, 200))); },
                      "cut: squashfs image is truncated (super block says 249 bytes, only 200 present)");
  // The window, not the file, bounds the reads: the bytes past it exist but are refused.
  UniqueFd fd = open_file(test::sif_fixture("input/root.squashfs"), O_RDONLY);
  expect_format_error([&] { Reader(fd.get(), 0, 248, "window"); }, "window: squashfs image is truncated");
  // A window larger than the file: reads past its end fail instead of returning zeros.
  std::string shortened = image.substr(0, 200);
  UniqueFd short_fd = open_file(dir.write("short", shortened), O_RDONLY);
  try {
    Reader r(short_fd.get(), 0, 4096, "short");
    r.read_file("/hello.txt");
    r.list_directory("/");
    ADD_FAILURE() << "reading a truncated image succeeded";
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("short: ", 0), 0u) << e.what();
  }
}

// Little-endian u64 field of the squashfs super block, for choosing test ranges.
std::uint64_t super_field(const std::string& image, std::size_t offset) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = value << 8 | static_cast<unsigned char>(image.at(offset + i));
  return value;
}
constexpr std::size_t kSuperBlockSize = 96, kBytesUsed = 40, kInodeTableStart = 64;

// Corrupts a small image one byte at a time (and cuts it at many lengths): each
// variant must either read or throw capsa::Error; a crash or hang fails the suite.
// Every byte of the super block and the metadata tables (from the inode table on) is
// flipped two ways; file data, slow to decompress and less interesting, every third
// byte one way. The image lives in one memfd patched in place.
void survive_corruptions(const std::string& image) {
  const std::size_t used = super_field(image, kBytesUsed);  // the rest is padding
  const std::size_t tables = super_field(image, kInodeTableStart);
  ASSERT_LE(used, image.size());
  ASSERT_LE(tables, used);
  UniqueFd fd(::memfd_create("corrupt-squashfs", MFD_CLOEXEC));
  ASSERT_TRUE(fd) << "memfd_create failed";
  auto put = [&](std::size_t at, std::string_view bytes) {
    write_all_at(fd.get(), std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), at);
  };
  put(0, std::string_view(image).substr(0, used));
  auto exercise = [&](std::uint64_t size) {
    try {
      Reader r(fd.get(), 0, size, "corrupt");
      r.list_directory("/");
      r.list_directory("/.singularity.d/env");
      r.read_file("/hello.txt");
      r.read_file("/singularity");
      r.read_file("/.singularity.d/runscript.help");
    } catch (const Error&) {
    }
  };
  for (std::size_t i = 0; i < used; ++i) {
    bool metadata = i < kSuperBlockSize || i >= tables;
    if (!metadata && i % 3 != 0) continue;
    for (char mask : {'\xFF', '\x01'}) {
      if (!metadata && mask == '\x01') continue;
      char flipped = static_cast<char>(image[i] ^ mask);
      put(i, std::string_view(&flipped, 1));
      exercise(used);
    }
    put(i, std::string_view(image).substr(i, 1));
  }
  for (std::size_t length = 0; length < used; length += 61) exercise(length);
}

TEST(SquashfsReaderBadInput, SurvivesCorruptedUpstreamImage) {
  survive_corruptions(test::read_file(test::sif_fixture("input/root.squashfs")));
}

TEST(SquashfsReaderBadInput, SurvivesCorruptedFixtureImage) {
  survive_corruptions(test::read_file(built_image()));
}

// fuzz_squashfs found a 4 KiB image whose extended file inode claims petabytes: libsquashfs
// sized its block list from that and asked for 3.7 GB. It is refused before that now.
TEST(SquashfsReaderBadInput, RefusesAnInodeClaimingAHugeFile) {
  const std::string path = std::string(CAPSA_FUZZ_CORPUS) + "/squashfs/oversized-ext-file-inode";
  UniqueFd fd = open_file(path, O_RDONLY);
  struct stat st {};
  ASSERT_EQ(::fstat(fd.get(), &st), 0);
  std::string refused;
  try {
    Reader reader(fd.get(), 0, static_cast<std::uint64_t>(st.st_size), "crafted");
    struct Ignore : TreeVisitor {
      void enter_directory(const Entry&) override {}
      void leave_directory(const Entry&) override {}
      void visit(const Entry&, const ReadContent&) override {}
    } ignore;
    reader.walk(ignore);
  } catch (const FormatError& e) {
    refused = e.what();
  }
  EXPECT_NE(refused.find("claims"), std::string::npos) << "refused: " << refused;
}

}  // namespace
}  // namespace capsa::squashfs
