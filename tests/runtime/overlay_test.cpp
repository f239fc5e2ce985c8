// -o/--overlay (and APPTAINER_OVERLAY): directories, ext3 images laid out as Apptainer's,
// squashfs images; what a container writes is there in the next run, owned as Apptainer
// would own it (root's as root, the caller's unprivileged); read-only layers are seen
// and never written; Apptainer's rules on writable layers. As root (loop device, kernel
// ext3 and overlayfs) and unprivileged (capsa's ext3 FUSE server under the kernel's
// overlayfs in the user namespace). Every test ends with nothing mounted, attached or running.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "runtime/overlay_support.hpp"
#include "runtime/run_support.hpp"
#include "support/background.hpp"
#include "support/leaks.hpp"
#include "support/temp_dir.hpp"

namespace capsa::runtime {
namespace {

namespace fs = std::filesystem;
using testing::capsa;

class Overlay : public ::testing::Test, protected test::PrivateContainers {
 protected:
  Overlay() : PrivateContainers("overlay.sif", "CAPSA_OVERLAY_MARK") {}
  test::ProcessResult run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> all = {"CAPSA_SESSION_DIR=" + session, marker};
    all.insert(all.end(), env.begin(), env.end());
    return capsa(args, all, "", work.path());
  }
  void TearDown() override {
    expect_nothing_left();
    // Bounded waits, as for the image: a loop device clears after the last mount of it
    // goes, which is after the container's last process (root's lone-image FUSE server
    // among them: runtime/lone_start.hpp) has ended.
    for (const auto& overlay : overlays) {
      EXPECT_TRUE(test::eventually([&] { return test::mounts_naming(overlay).empty(); }, 30))
          << test::joined(test::mounts_naming(overlay));
      EXPECT_TRUE(test::eventually([&] { return test::loop_devices_backed_by(overlay).empty(); }, 30))
          << test::joined(test::loop_devices_backed_by(overlay));
      EXPECT_TRUE(test::eventually([&] { return test::processes_with_argument(overlay).empty(); }, 30))
          << test::joined(test::processes_with_argument(overlay));
    }
  }
  // An overlay path the test uses, checked for leftovers at the end.
  std::string overlay(const std::string& name) { return overlays.emplace_back(work / name); }
  std::vector<std::string> overlays;
};

TEST_F(Overlay, ADirectoryKeepsWhatOneRunWroteForTheNext) {
  const std::string dir = overlay("persist");
  fs::create_directory(dir);
  auto wrote =
      run({"exec", "--overlay", dir, image, "sh", "-c", "mkdir -p /opt/env && echo one > /opt/env/f && echo ok"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  EXPECT_EQ(wrote.out, "ok\n");
  EXPECT_EQ(test::read_file(dir + "/upper/opt/env/f"), "one\n") << "Apptainer's layout: DIR/upper and DIR/work";
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/upper/opt/env/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, ::getuid());
  auto read = run({"exec", "-o", dir, image, "cat", "/opt/env/f"});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "one\n");
}

TEST_F(Overlay, ACommandThatReapsEveryChildEnds) {
  // busybox tar waits for every child it has: the overlay's lock holder must not be one
  // (it was, and such a command never ended).
  const std::string dir = overlay("reaped");
  fs::create_directory(dir);
  fs::create_directories(work / "tree/pkg");
  work.write("tree/pkg/module.py", "x = 1\n");
  ASSERT_EQ(test::run_process({"tar", "-C", work / "tree", "-cf", work / "tree.tar", "."}).exit_code, 0);
  auto unpacked = run({"exec", "--overlay", dir, image, "sh", "-c",
                       "mkdir -p /opt/conda && busybox tar -xf " + (work / "tree.tar") +
                           " -C /opt/conda && cat /opt/conda/pkg/module.py"});
  EXPECT_EQ(unpacked.exit_code, 0) << unpacked.err;
  EXPECT_EQ(unpacked.out, "x = 1\n");
}

TEST_F(Overlay, AReadOnlyDirectoryIsSeenAndNeverWritten) {
  const std::string dir = overlay("layer");
  fs::create_directories(dir + "/upper/data");
  std::ofstream(dir + "/upper/data/in") << "from the layer\n";
  auto r = run({"exec", "--overlay", dir + ":ro", image, "sh", "-c",
                "cat /data/in; touch /data/new 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "from the layer\nREFUSED\n");
  EXPECT_FALSE(fs::exists(dir + "/upper/data/new"));
  EXPECT_FALSE(fs::exists(dir + "/work")) << "a read-only layer gets no work directory";
}

TEST_F(Overlay, AnApptainerExt3ImageKeepsWritesOwnedAsApptainerWould) {
  const std::string img = overlay("overlay.img");
  testing::make_apptainer_ext3_overlay(img);
  // Root may delete a file of the image (a whiteout in upper/); anyone else may not (the
  // image's /bin is root's), as in Apptainer without --fakeroot.
  const std::string whiteout = ::geteuid() == 0 ? "rm /bin/true && " : "";
  auto wrote = run({"exec", "--overlay", img, image, "sh", "-c",
                    "mkdir -p /opt/conda/bin && echo two > /opt/conda/bin/tool && chmod 0750 /opt/conda/bin/tool && "
                    "echo old > /opt/conda/old && " +
                        whiteout + "echo ok"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  EXPECT_EQ(wrote.out, "ok\n");
  auto removed = run({"exec", "--overlay", img, image, "rm", "/opt/conda/old"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  auto read =
      run({"exec", "--overlay", img, image, "sh", "-c",
           "cat /opt/conda/bin/tool; stat -c '%a %u' /opt/conda/bin/tool; ls /opt/conda; ls /bin/true 2>&1 || true"});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  const auto lines = testing::lines_of(read.out);
  ASSERT_GE(lines.size(), 4u) << read.out;
  EXPECT_EQ(lines[0], "two");
  EXPECT_EQ(lines[1], "750 " + std::to_string(::getuid()));
  EXPECT_EQ(lines[2], "bin") << "the deletion of /opt/conda/old persists";
  EXPECT_EQ(lines[3].find("No such file") != std::string::npos, ::geteuid() == 0) << read.out;
  // From the host, with e2fsprogs: in upper/, owned by root (root's run) or the caller.
  EXPECT_EQ(testing::ext3_file(img, "/upper/opt/conda/bin/tool"), "two\n");
  EXPECT_EQ(testing::ext3_owner(img, "/upper/opt/conda/bin/tool"), static_cast<long>(::getuid()));
  auto fsck = testing::e2fs_tool({"e2fsck", "-fn", img});
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
}

// The file system type of the container's root, from what the container's own
// /proc/self/mountinfo says.
std::string root_type(const std::string& mountinfo) {
  for (const std::string& line : testing::lines_of(mountinfo)) {
    std::istringstream fields(line);
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
    if (f.size() < 5 || f[4] != "/") continue;
    auto dash = std::find(f.begin(), f.end(), "-");
    if (dash != f.end() && dash + 1 != f.end()) return *(dash + 1);
  }
  return "";
}

TEST_F(Overlay, AnExt3ImageIsAnUpperLayerOfTheKernelsOverlayfsAndKeepsWhiteouts) {
  // Unprivileged, capsa's ext3 FUSE server (the default) serves the image and the kernel's overlayfs
  // takes it as its upper layer (fuse2fs needed fuse-overlayfs on top); as root, the
  // kernel's ext3 does. A file of a lower layer removed in one run stays removed: a
  // whiteout (a 0/0 character device) in upper/.
  const std::string img = overlay("whiteouts.img");
  testing::make_apptainer_ext3_overlay(img);
  const std::string lower = overlay("lower");
  fs::create_directories(lower + "/upper/data");
  std::ofstream(lower + "/upper/data/from-lower") << "lower\n";
  std::ofstream(lower + "/upper/data/kept") << "kept\n";
  auto removed = run({"exec", "--overlay", lower + ":ro", "--overlay", img, image, "sh", "-c",
                      "rm /data/from-lower && cat /proc/self/mountinfo"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  // Kernels before 5.11 (capsa-old-kernel 4.18) refuse overlayfs in a user namespace.
  const char* kernel = std::getenv("CAPSA_TEST_KERNEL");
  const bool old_kernel = ::geteuid() != 0 && kernel != nullptr && std::string(kernel) == "4.18";
  EXPECT_EQ(root_type(removed.out), old_kernel ? "fuse.fuse-overlayfs" : "overlay") << removed.out;
  EXPECT_EQ(removed.err, "");
  auto later = run({"exec", "--overlay", lower + ":ro", "--overlay", img, image, "sh", "-c",
                    "ls /data; test -e /data/from-lower && echo STILL-THERE || echo gone"});
  EXPECT_EQ(later.exit_code, 0) << later.err;
  EXPECT_EQ(later.out, "kept\ngone\n");
  EXPECT_TRUE(fs::exists(lower + "/upper/data/from-lower")) << "the read-only layer is never written";
  auto whiteout = testing::e2fs_tool({"debugfs", "-R", "stat /upper/data/from-lower", img});
  EXPECT_NE(whiteout.out.find("Type: character special"), std::string::npos) << whiteout.out << whiteout.err;
  auto fsck = testing::e2fs_tool({"e2fsck", "-fn", img});
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
}

TEST_F(Overlay, Fuse2fsStillServesAnExt3ImageWhenAskedForComparison) {
  if (::geteuid() == 0) GTEST_SKIP() << "root mounts ext3 with the kernel";
  const std::string img = overlay("fuse2fs.img");
  testing::make_apptainer_ext3_overlay(img);
  auto wrote = run({"exec", "--overlay", img, image, "sh", "-c", "echo via-fuse2fs > /f && cat /proc/self/mountinfo"},
                   {"CAPSA_EXT3_FUSE=fuse2fs"});
  ASSERT_EQ(wrote.exit_code, 0) << wrote.err;
  EXPECT_EQ(root_type(wrote.out), "fuse.fuse-overlayfs") << wrote.out;
  EXPECT_EQ(testing::ext3_file(img, "/upper/f"), "via-fuse2fs\n");
  auto unknown = run({"exec", "--overlay", img, image, "true"}, {"CAPSA_EXT3_FUSE=fuse3fs"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.err, "capsa: error: CAPSA_EXT3_FUSE=fuse3fs: unknown ext3 FUSE server (use builtin or fuse2fs)\n");
}

TEST_F(Overlay, AnExt3ImageAsAReadOnlyLayerIsShownAndNotWritten) {
  const std::string img = overlay("ro.img");
  testing::make_apptainer_ext3_overlay(img);
  ASSERT_EQ(run({"exec", "--overlay", img, image, "sh", "-c", "echo kept > /kept"}).exit_code, 0);
  auto r = run({"exec", "--overlay", img + ":ro", image, "sh", "-c",
                "cat /kept; echo x > /other 2>/dev/null && echo WROTE || echo REFUSED"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "kept\nREFUSED\n");
  EXPECT_EQ(testing::ext3_owner(img, "/upper/other"), -1);
}

TEST_F(Overlay, ASquashfsImageIsAReadOnlyLayerAndLaterLayersLieOnTop) {
  const std::string tree = work / "tree";
  fs::create_directories(tree + "/etc/layer");
  std::ofstream(tree + "/etc/layer/which") << "squashfs\n";
  std::ofstream(tree + "/etc/layer/only-squashfs") << "yes\n";
  const std::string sqfs = overlay("layer.sqfs");
  auto made = test::run_process({"mksquashfs", tree, sqfs, "-quiet", "-noappend"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string top = overlay("top");
  fs::create_directories(top + "/etc/layer");
  std::ofstream(top + "/etc/layer/which") << "directory\n";
  auto r = run({"exec", "--overlay", sqfs, "--overlay", top + ":ro", image, "cat", "/etc/layer/which",
                "/etc/layer/only-squashfs"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "directory\nyes\n");
  EXPECT_EQ(r.err, "WARNING: Overlay image " + sqfs + " is not writable, proceeding with read-only\n");
}

TEST_F(Overlay, TheEnvironmentVariablesNameThemAsACommaList) {
  const std::string base = overlay("base"), rw = overlay("rw");
  fs::create_directories(base + "/upper");
  fs::create_directory(rw);
  std::ofstream(base + "/upper/from-base") << "base\n";
  for (const char* var : {"APPTAINER_OVERLAY", "SINGULARITY_OVERLAY"}) {
    auto r = run({"exec", image, "sh", "-c", "cat /from-base && echo new > /from-env"},
                 {std::string(var).append("=").append(base).append(":ro,").append(rw)});
    EXPECT_EQ(r.exit_code, 0) << var << ": " << r.err;
    EXPECT_EQ(r.out, "base\n") << var;
    EXPECT_EQ(test::read_file(rw + "/upper/from-env"), "new\n") << var;
  }
}

TEST_F(Overlay, ApptainersRulesOnWritableLayersHoldInOneLine) {
  const std::string a = overlay("a"), b = overlay("b");
  fs::create_directory(a);
  fs::create_directory(b);
  auto two = run({"exec", "--overlay", a, "--overlay", b, image, "true"});
  EXPECT_EQ(two.exit_code, 1);
  EXPECT_EQ(two.err, "capsa: error: you can't specify more than one writable overlay, " + a +
                         " contains a writable overlay, requires to use '--overlay " + b + ":ro'\n");
  auto tmpfs = run({"exec", "--overlay", a, "--writable-tmpfs", image, "true"});
  EXPECT_EQ(tmpfs.exit_code, 1);
  EXPECT_EQ(tmpfs.err,
            "capsa: error: you can't specify --writable-tmpfs with another writable overlay image (" + a + ")\n");
  auto writable = run({"exec", "--overlay", a, "--writable", image, "true"});
  EXPECT_EQ(writable.exit_code, 1);
  EXPECT_EQ(writable.err, "capsa: error: cannot use --overlay in conjunction with --writable\n");
  EXPECT_FALSE(fs::exists(a + "/upper")) << "refused before anything was made";
}

TEST_F(Overlay, WhatIsNotAnOverlayIsRefusedNamingIt) {
  const std::string junk = overlay("junk.img");
  std::ofstream(junk) << std::string(8192, 'x');
  auto r = run({"exec", "--overlay", junk, image, "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "capsa: error: --overlay " + junk +
                       ": not a directory, an ext3 image, a squashfs image or a SIF (make one with `capsa overlay "
                       "create`)\n");
  auto missing = run({"exec", "--overlay", work / "missing", image, "true"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("--overlay " + work / "missing"), std::string::npos) << missing.err;
  EXPECT_EQ(missing.out, "");
}

}  // namespace
}  // namespace capsa::runtime
