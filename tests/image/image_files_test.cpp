// The read-only view of an image's files (image/image_files.hpp) over its two forms: a
// sandbox directory and the same tree packed into a SIF's squashfs. Both must answer
// alike, links must stay inside the image, and `inspect` must print the same text.
#include "image/image_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "image/directory_files.hpp"
#include "image/metadata.hpp"
#include "image/squashfs_files.hpp"
#include "sif/image.hpp"
#include "sif/writer.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::image {
namespace {

using test::TempDir;

constexpr const char* kTreePasswd = "root:x:0:0:the tree's own:/root:/bin/sh\n";

// One tree with what inspect must tell apart, written as a sandbox and packed into a SIF.
class ImageForms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    namespace fs = std::filesystem;
    const fs::path root = sandbox();
    fs::create_directories(root / ".singularity.d/env/92-environment.sh");  // a directory: not shown
    fs::create_directories(root / "etc");
    auto write = [&](const std::string& path, const std::string& content) { dir_->write("tree" + path, content); };
    auto link = [&](const std::string& target, const std::string& path) {
      fs::create_symlink(target, root / path.substr(1));
    };
    write("/etc/passwd", kTreePasswd);
    write("/etc/help.txt", "help from the tree\n\n");
    write("/.singularity.d/labels.json", R"({"MAINTAINER": "capsa <tests@example.org>", "empty": "", "z": "last"})");
    write("/.singularity.d/Singularity", "bootstrap: scratch\n\n%runscript\n    exec \"$@\"\n");
    write("/.singularity.d/runscript", "#!/bin/sh\n\nexec \"$@\"\n\n\n");
    // Links that would leave the tree on the host resolve inside it.
    link("../../../../../../../../etc/passwd", "/.singularity.d/test");
    link("/etc/help.txt", "/.singularity.d/runscript.help");
    link("/etc/hostname", "/.singularity.d/startscript");  // the host has one, the tree not
    write("/.singularity.d/env/01-base.sh", "#!/bin/sh\n");
    write("/.singularity.d/env/10-docker.sh", "export FROM_DOCKER=short\n");  // matched by 10-docker*.sh
    write("/.singularity.d/env/10-docker2singularity.sh", "#!/bin/sh\nexport PATH=\"/usr/bin:/bin\"\n");
    write("/.singularity.d/env/90-environment.sh", "#!/bin/sh\nexport FOO=bar\n");
    link("90-environment.sh", "/.singularity.d/env/91-environment.sh");
    link("/missing", "/.singularity.d/env/95-dangling-environment.sh");
    ASSERT_EQ(::mkfifo((root / ".singularity.d/env/96-fifo-environment.sh").c_str(), 0644), 0);
    write("/.singularity.d/env/99-base.sh", "#!/bin/sh\n");
    link("loop-b", "/etc/loop-a");
    link("loop-a", "/etc/loop-b");

    const std::string squashfs = *dir_ / "tree.squashfs";
    auto packed = test::run_process(
        {"gensquashfs", "--pack-dir", root.string(), "--all-root", "--quiet", "--force", "-c", "gzip", squashfs});
    ASSERT_EQ(packed.exit_code, 0) << packed.err;
    sif::create(sif_path(), sif::CreateOptions{},
                {sif::partition_input(squashfs, sif::FsType::Squashfs, sif::PartType::PrimSys, "amd64")});
  }
  static void TearDownTestSuite() { delete dir_; }

  static std::string sandbox() { return *dir_ / "tree"; }
  static std::string sif_path() { return *dir_ / "tree.sif"; }

  // Both forms, each with the name the assertions print.
  static std::vector<std::pair<std::string, std::unique_ptr<ImageFiles>>> both_forms(const sif::Image& sif) {
    std::vector<std::pair<std::string, std::unique_ptr<ImageFiles>>> forms;
    forms.emplace_back("sandbox", std::make_unique<DirectoryFiles>(sandbox()));
    forms.emplace_back("SIF", std::make_unique<SquashfsFiles>(open_primary_squashfs(sif)));
    return forms;
  }

  static std::string inspect_sandbox(const InspectOptions& o) {
    return format_inspect(read_metadata(DirectoryFiles(sandbox()), o), o);
  }
  static std::string inspect_sif(const InspectOptions& o) {
    return format_inspect(read_metadata(sif::Image::open(sif_path()), o), o);
  }

  static TempDir* dir_;
};

TempDir* ImageForms::dir_ = nullptr;

TEST_F(ImageForms, InspectPrintsTheSameForTheSandboxAndTheSif) {
  InspectOptions all;
  all.all = true;
  InspectOptions plain;
  plain.labels = plain.deffile = plain.runscript = plain.startscript = plain.test = plain.environment = plain.helpfile =
      true;
  InspectOptions environment;
  environment.environment = true;
  for (const InspectOptions& o : {InspectOptions{}, all, plain, environment})
    EXPECT_EQ(inspect_sandbox(o), inspect_sif(o));

  // What that common output is: Apptainer's globs env/10-docker*.sh and
  // env/9*-environment.sh, regular files only (after links), links kept inside the image.
  EXPECT_EQ(inspect_sandbox(environment),
            "=== /.singularity.d/env/10-docker.sh ===\nexport FROM_DOCKER=short\n\n"
            "=== /.singularity.d/env/10-docker2singularity.sh ===\n#!/bin/sh\nexport PATH=\"/usr/bin:/bin\"\n\n"
            "=== /.singularity.d/env/90-environment.sh ===\n#!/bin/sh\nexport FOO=bar\n\n"
            "=== /.singularity.d/env/91-environment.sh ===\n#!/bin/sh\nexport FOO=bar\n\n");
  EXPECT_EQ(inspect_sandbox(plain),
            "bootstrap: scratch\n\n%runscript\n    exec \"$@\"\n"
            "#!/bin/sh\n\nexec \"$@\"\n"
            "root:x:0:0:the tree's own:/root:/bin/sh\n"  // test -> ../../..(beyond the root)/etc/passwd
            "help from the tree\n"                       // runscript.help -> /etc/help.txt of the tree
            "=== /.singularity.d/env/10-docker.sh ===\nexport FROM_DOCKER=short\n\n"
            "=== /.singularity.d/env/10-docker2singularity.sh ===\n#!/bin/sh\nexport PATH=\"/usr/bin:/bin\"\n\n"
            "=== /.singularity.d/env/90-environment.sh ===\n#!/bin/sh\nexport FOO=bar\n\n"
            "=== /.singularity.d/env/91-environment.sh ===\n#!/bin/sh\nexport FOO=bar\n\n"
            "MAINTAINER: capsa <tests@example.org>\nempty: \nz: last\n");
}

TEST_F(ImageForms, BothFormsAnswerAlike) {
  sif::Image sif = sif::Image::open(sif_path());
  for (const auto& [form, files] : both_forms(sif)) {
    SCOPED_TRACE(form);
    EXPECT_EQ(files->read_file("/etc/passwd"), kTreePasswd);
    EXPECT_EQ(files->read_file("/.singularity.d/test"), kTreePasswd) << "a relative link climbing past the root";
    EXPECT_EQ(files->read_file("//.singularity.d/./env/../runscript.help"), "help from the tree\n\n");
    EXPECT_EQ(files->read_file("/.singularity.d/startscript"), std::nullopt) << "the host's /etc/hostname";
    EXPECT_EQ(files->read_file("/no/such/file"), std::nullopt);
    EXPECT_EQ(files->read_file("/etc/passwd/below-a-file"), std::nullopt);
    EXPECT_EQ(files->read_file("/etc"), std::nullopt) << "a directory";
    EXPECT_EQ(files->read_file("/.singularity.d/env/95-dangling-environment.sh"), std::nullopt);
    EXPECT_EQ(files->read_file("/.singularity.d/env/96-fifo-environment.sh"), std::nullopt) << "a FIFO, not opened";
    EXPECT_THROW(files->read_file("/etc/loop-a"), FormatError);
    EXPECT_THROW(files->read_file("/etc/passwd", 10), FormatError) << "over max_bytes";
    EXPECT_EQ(files->read_file("/etc/passwd", std::string(kTreePasswd).size()), kTreePasswd) << "exactly max_bytes";

    EXPECT_EQ(files->list_directory("/.singularity.d/env"),
              (std::vector<std::string>{"01-base.sh", "10-docker.sh", "10-docker2singularity.sh", "90-environment.sh",
                                        "91-environment.sh", "92-environment.sh", "95-dangling-environment.sh",
                                        "96-fifo-environment.sh", "99-base.sh"}));
    EXPECT_EQ(files->list_directory("/"), (std::vector<std::string>{".singularity.d", "etc"}));
    EXPECT_EQ(files->list_directory("/../../.."), files->list_directory("/")) << "\"..\" stops at the root";
    EXPECT_EQ(files->list_directory("/etc/passwd"), std::nullopt);
    EXPECT_EQ(files->list_directory("/missing"), std::nullopt);
  }
}

TEST(DirectoryFiles, AMissingRootIsOneClearError) {
  TempDir dir;
  try {
    DirectoryFiles files(dir / "absent");
    ADD_FAILURE() << "no error";
  } catch (const SystemError& e) {
    EXPECT_EQ(std::string(e.what()).find(dir / "absent"), 0u) << e.what();
  }
}

}  // namespace
}  // namespace capsa::image
