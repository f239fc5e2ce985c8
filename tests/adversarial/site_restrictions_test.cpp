// The administrator's restrictions (docs/administration.md, "What users cannot loosen")
// attacked by an unprivileged user: for each restriction, every flag and variable that
// would loosen it, each with a configuration file of the user's (-c, CAPSA_CONFIG,
// APPTAINER_CONFIG_FILE, SINGULARITY_CONFIG_FILE) that says the opposite, through the
// site's capsa, its capsa-full run directly and a symlink to capsa beside a file of the
// user's. Each attempt first shows that it works where the site allows it, so a refusal
// is the restriction's doing.
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "people.hpp"

namespace capsa::adversarial {
namespace {

namespace fs = std::filesystem;

// What an attempt prints where the restriction does not hold.
constexpr const char* kLoose = "LOOSENED";

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// PATH as `owner`'s directory (mode 0755), made with its parents' ownership untouched.
std::string owned_dir(const Person& owner, const std::string& path) {
  fs::create_directories(path);
  if (::chown(path.c_str(), owner.uid, owner.gid) != 0 || ::chmod(path.c_str(), 0755) != 0)
    throw std::runtime_error("chown/chmod " + path);
  return path;
}

// The attacker's material, made once for the binary: their image, a marker file the
// attempts try to show inside, overlay images and a CDI spec that binds the marker.
struct Material {
  OwnedDir dir{attacker()};
  std::string image, marker_dir, overlay_dir, squashfs, ext3, cdi_dir, workdir, home_marker;

  Material() {
    image = image_owned_by(attacker(), dir, "busybox.sif");
    marker_dir = owned_dir(attacker(), dir / "data");
    write_owned(marker_dir + "/marker");
    write_owned(marker_dir + "/libmarker.so");
    overlay_dir = owned_dir(attacker(), dir / "overlay");
    workdir = owned_dir(attacker(), dir / "work");
    owned_dir(attacker(), workdir + "/tmp");
    write_owned(workdir + "/tmp/marker");
    // A read-only squashfs layer with the marker at its top.
    squashfs = dir / "layer.sqfs";
    run_or_throw({"mksquashfs", marker_dir, squashfs, "-quiet", "-noappend", "-all-root"});
    if (::chown(squashfs.c_str(), attacker().uid, attacker().gid) != 0) throw std::runtime_error("chown " + squashfs);
    // A writable ext3 overlay image of the attacker's (upper/ and work/ theirs).
    ext3 = dir / "overlay.img";
    test::ProcessResult made = run_as(attacker(), {site_capsa(), "overlay", "create", "--size", "64", ext3});
    if (made.exit_code != 0) throw std::runtime_error("capsa overlay create: " + made.err);
    cdi_dir = owned_dir(attacker(), dir / "cdi");
    dir.write("cdi/marker.json",
              R"({"cdiVersion": "0.5.0", "kind": "capsa.test/marker", "devices": [{"name": "m", "containerEdits": )"
              R"({"mounts": [{"hostPath": ")" +
                  marker_dir + R"(", "containerPath": "/mnt", "options": ["bind", "ro"]}]}}]})");
    home_marker = attacker().home + "/capsa-site-restrictions-marker";
    write_owned(home_marker);
  }
  ~Material() { ::unlink(home_marker.c_str()); }

  void write_owned(const std::string& path) const {
    std::ofstream(path, std::ios::trunc) << kLoose << "\n";
    if (::chown(path.c_str(), attacker().uid, attacker().gid) != 0) throw std::runtime_error("chown " + path);
  }
  static void run_or_throw(const std::vector<std::string>& argv) {
    test::ProcessResult r = test::run_process(argv);
    if (r.exit_code != 0) throw std::runtime_error(argv[0] + ": " + r.err);
  }
};

const Material& material() {
  static const Material made;
  return made;
}

// One way a user could get past a restriction: a command line and environment that
// print kLoose (or pass `loosened`) where the restriction does not hold.
struct Attempt {
  std::string what;  // "-B SRC:/mnt"
  std::vector<std::string> args;
  std::vector<std::string> env = {};
  std::function<bool(const test::ProcessResult&)> loosened = nullptr;
  // -H and APPTAINER_HOME bind nothing where no home is mounted (--build-config): not
  // refused there, only harmless.
  bool binds_home = false;
};

struct Restriction {
  std::string name;     // the test's name
  std::string site;     // the administrator's lines
  std::string users;    // a user's file that says the opposite
  std::string refusal;  // what the refusal names in backquotes; "" where the run goes on, restricted
  std::vector<Attempt> attempts;
};

bool printed_loose(const test::ProcessResult& r) { return r.out.find(kLoose) != std::string::npos; }

std::string host_link(const std::string& path) {
  std::error_code error;
  return fs::read_symlink(path, error).string() + "\n";
}

std::string group_name(gid_t gid) {
  const group* g = ::getgrgid(gid);
  return g != nullptr ? g->gr_name : std::to_string(gid);
}

std::vector<std::string> exec(std::vector<std::string> flags, std::vector<std::string> command) {
  std::vector<std::string> args = {"exec"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back(material().image);
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

std::vector<std::string> cat(const std::string& path) { return {"cat", path}; }
std::vector<std::string> sh(const std::string& script) { return {"sh", "-c", script}; }

std::vector<Restriction> restrictions() {
  const Material& m = material();
  const std::string src = m.marker_dir;
  // A refusal is not a pass for an attempt whose loosening is "got past the check".
  auto not_refused_by = [](const std::string& directive) {
    return [directive](const test::ProcessResult& r) { return r.err.find(directive) == std::string::npos; };
  };
  const std::string pid_ns = host_link("/proc/self/ns/pid"), uts_ns = host_link("/proc/self/ns/uts");
  const std::string resolv_conf = text_of("/etc/resolv.conf");
  const std::string write_16m = "dd if=/dev/zero of=/big bs=1M count=16 2>/dev/null && echo " + std::string(kLoose);
  return {
      {"UserBindControl",
       "user bind control = no\n",
       "user bind control = yes\n",
       "user bind control = no",
       {
           {"-B", exec({"-B", src + ":/mnt"}, cat("/mnt/marker"))},
           {"--mount", exec({"--mount", "type=bind,src=" + src + ",dst=/mnt"}, cat("/mnt/marker"))},
           {"APPTAINER_BIND", exec({}, cat("/mnt/marker")), {"APPTAINER_BIND=" + src + ":/mnt"}},
           {"APPTAINER_BINDPATH", exec({}, cat("/mnt/marker")), {"APPTAINER_BINDPATH=" + src + ":/mnt"}},
           {"SINGULARITY_BIND", exec({}, cat("/mnt/marker")), {"SINGULARITY_BIND=" + src + ":/mnt"}},
           {"APPTAINER_MOUNT", exec({}, cat("/mnt/marker")), {"APPTAINER_MOUNT=src=" + src + ",dst=/mnt"}},
           {"-H SRC:DST", exec({"-H", src + ":/mnt"}, cat("/mnt/marker")), {}, nullptr, true},
           // /tmp, where the marker is, not bound: only the home shows it.
           {"--home SRC", exec({"--home", src, "--no-mount", "tmp"}, cat(src + "/marker")), {}, nullptr, true},
           {"APPTAINER_HOME",
            exec({"--contain"}, cat("/mnt/marker")),
            {"APPTAINER_HOME=" + src + ":/mnt"},
            nullptr,
            true},
           {"SINGULARITY_HOME",
            exec({"--contain"}, cat("/mnt/marker")),
            {"SINGULARITY_HOME=" + src + ":/mnt"},
            nullptr,
            true},
           {"--containlibs", exec({"--containlibs", src + "/libmarker.so"}, cat("/.singularity.d/libs/libmarker.so"))},
           {"APPTAINER_CONTAINLIBS",
            exec({}, cat("/.singularity.d/libs/libmarker.so")),
            {"APPTAINER_CONTAINLIBS=" + src + "/libmarker.so"}},
           {"--cdi-dirs", exec({"--cdi-dirs", m.cdi_dir, "--device", "capsa.test/marker=m"}, cat("/mnt/marker"))},
           {"-W", exec({"-W", m.workdir, "--contain"}, cat("/tmp/marker"))},
           {"APPTAINER_WORKDIR", exec({"--contain"}, cat("/tmp/marker")), {"APPTAINER_WORKDIR=" + m.workdir}},
           {"-S", exec({"-S", "/scratched"}, sh("test -d /scratched && echo LOOSENED"))},
           {"APPTAINER_SCRATCH", exec({}, sh("test -d /scratched && echo LOOSENED")), {"APPTAINER_SCRATCH=/scratched"}},
       }},
      {"MountHome", "mount home = no\n", "mount home = yes\n", "", {{"home", exec({}, cat(m.home_marker))}}},
      {"MountTmp", "mount tmp = no\n", "mount tmp = yes\n", "", {{"/tmp", exec({}, cat(src + "/marker"))}}},
      {"MountProc",
       "mount proc = no\n",
       "mount proc = yes\n",
       "",
       {{"/proc", exec({}, sh("test -e /proc/self/status && echo LOOSENED"))}}},
      {"MountSys",
       "mount sys = no\n",
       "mount sys = yes\n",
       "",
       {{"/sys", exec({}, sh("test -e /sys/kernel && echo LOOSENED"))}}},
      {"MountDevpts",
       "mount devpts = no\n",
       "mount devpts = yes\n",
       "",
       {{"--contain", exec({"--contain"}, sh("test -e /dev/pts/ptmx && echo LOOSENED"))}}},
      {"ConfigResolvConf",
       "config resolv_conf = no\n",
       "config resolv_conf = yes\n",
       "",
       {{"/etc/resolv.conf",
         exec({}, cat("/etc/resolv.conf")),
         {},
         [resolv_conf](const test::ProcessResult& r) { return !resolv_conf.empty() && r.out == resolv_conf; }}}},
      {"EnableOverlay",
       "enable overlay = no\n",
       "enable overlay = yes\n",
       "enable overlay = no",
       {
           {"--writable-tmpfs", exec({"--writable-tmpfs"}, sh("echo x > /w && echo LOOSENED"))},
           {"APPTAINER_WRITABLE_TMPFS", exec({}, sh("echo x > /w && echo LOOSENED")), {"APPTAINER_WRITABLE_TMPFS=1"}},
           {"--compat", exec({"--compat"}, sh("echo x > /w && echo LOOSENED"))},
           {"--overlay DIR", exec({"--overlay", m.overlay_dir}, sh("echo x > /w && echo LOOSENED"))},
           {"APPTAINER_OVERLAY", exec({}, sh("echo x > /w && echo LOOSENED")), {"APPTAINER_OVERLAY=" + m.overlay_dir}},
       }},
      {"EnableUnderlay",
       "enable underlay = no\n",
       "enable underlay = yes\n",
       "enable underlay = no",
       {
           {"--underlay", exec({"--underlay"}, {"echo", kLoose})},
           {"APPTAINER_UNDERLAY", exec({}, {"echo", kLoose}), {"APPTAINER_UNDERLAY=1"}},
       }},
      {"EnableFusemount",
       "enable fusemount = no\n",
       "enable fusemount = yes\n",
       "enable fusemount = no",
       {
           {"--fusemount",
            exec({"--fusemount", "container:true /mnt/f"}, {"true"}),
            {},
            not_refused_by("enable fusemount")},
           {"APPTAINER_FUSESPEC",
            exec({}, {"true"}),
            {"APPTAINER_FUSESPEC=container:true /mnt/f"},
            not_refused_by("enable fusemount")},
       }},
      {"AllowContainerSif",
       "allow container sif = no\n",
       "allow container sif = yes\n",
       "allow container sif = no",
       {
           {"a SIF", exec({}, {"echo", kLoose})},
           {"--unsquash", exec({"--unsquash"}, {"echo", kLoose})},
       }},
      {"AllowContainerDir",
       "allow container dir = no\n",
       "allow container dir = yes\n",
       "allow container dir = no",
       {{"--overlay DIR", exec({"--overlay", m.overlay_dir}, {"echo", kLoose})}}},
      {"AllowContainerSquashfs",
       "allow container squashfs = no\n",
       "allow container squashfs = yes\n",
       "allow container squashfs = no",
       {{"--overlay FILE.sqfs", exec({"--overlay", m.squashfs}, cat("/marker"))}}},
      {"AllowContainerExtfs",
       "allow container extfs = no\n",
       "allow container extfs = yes\n",
       "allow container extfs = no",
       {{"--overlay FILE.img", exec({"--overlay", m.ext3}, {"echo", kLoose})}}},
      {"LimitContainerPaths",
       "limit container paths = /nonexistent/capsa-site-images\n",
       "limit container paths = /\n",
       "limit container paths",
       {{"an image elsewhere", exec({}, {"echo", kLoose})}}},
      {"LimitContainerOwners",
       "limit container owners = root\n",
       "limit container owners = " + attacker().name + "\n",
       "limit container owners",
       {{"an image of their own", exec({}, {"echo", kLoose})}}},
      {"LimitContainerGroups",
       "limit container groups = root\n",
       "limit container groups = " + group_name(attacker().gid) + "\n",
       "limit container groups",
       {{"an image of their group", exec({}, {"echo", kLoose})}}},
      {"SessiondirMaxSize",
       "sessiondir max size = 8\n",
       "sessiondir max size = 4096\n",
       "",
       {{"16 MiB in --writable-tmpfs", exec({"--writable-tmpfs"}, sh(write_16m))}}},
      // A ramfs takes no size limit: the user's file may not choose it (issue 45).
      {"MemoryFsType",
       "sessiondir max size = 8\nmemory fs type = tmpfs\n",
       "memory fs type = ramfs\n",
       "",
       {{"16 MiB in --writable-tmpfs", exec({"--writable-tmpfs"}, sh(write_16m))}}},
      {"AllowPidNs",
       "allow pid ns = no\n",
       "allow pid ns = yes\n",
       "",
       {
           {"--pid",
            exec({"--pid"}, {"readlink", "/proc/self/ns/pid"}),
            {},
            [pid_ns](const test::ProcessResult& r) { return r.exit_code == 0 && r.out != pid_ns; }},
           {"APPTAINER_PID",
            exec({}, {"readlink", "/proc/self/ns/pid"}),
            {"APPTAINER_PID=1"},
            [pid_ns](const test::ProcessResult& r) { return r.exit_code == 0 && r.out != pid_ns; }},
       }},
      {"AllowUtsNs",
       "allow uts ns = no\n",
       "allow uts ns = yes\n",
       "",
       {
           {"--hostname",
            exec({"--hostname", "capsa-attacker"}, {"hostname"}),
            {},
            [](const test::ProcessResult& r) { return r.out == "capsa-attacker\n"; }},
           {"--uts",
            exec({"--uts"}, {"readlink", "/proc/self/ns/uts"}),
            {},
            [uts_ns](const test::ProcessResult& r) { return r.exit_code == 0 && r.out != uts_ns; }},
       }},
  };
}

// How the attacker runs capsa, with a file `users_file` of their own that loosens.
struct Way {
  std::string what;
  std::function<test::ProcessResult(const Attempt&, const std::string& users_file)> run;
  bool mounts_home = true;  // --build-config mounts none
};

test::ProcessResult run_with(const std::string& program, std::vector<std::string> global, const Attempt& a,
                             std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {program};
  argv.insert(argv.end(), global.begin(), global.end());
  argv.insert(argv.end(), a.args.begin(), a.args.end());
  env.insert(env.end(), a.env.begin(), a.env.end());
  return run_as(attacker(), argv, env);
}

// PREFIX/bin/capsa, a symlink to the site's capsa in a prefix of the attacker's with a
// capsa.conf of their own in PREFIX/etc/capsa: capsa finds its files from
// /proc/self/exe, the site's binary, and so reads the site's file.
std::string symlinked_capsa(const std::string& users_file) {
  static OwnedDir prefix(attacker());
  std::string bin = owned_dir(attacker(), prefix / "bin") + "/capsa";
  owned_dir(attacker(), prefix / "etc");
  owned_dir(attacker(), prefix / "etc/capsa");
  fs::copy_file(users_file, prefix / "etc/capsa/capsa.conf", fs::copy_options::overwrite_existing);
  std::error_code ignored;
  fs::remove(bin, ignored);
  fs::create_symlink(site_capsa(), bin);
  return bin;
}

const std::vector<Way>& ways() {
  static const std::vector<Way> all = {
      {"capsa", [](const Attempt& a, const std::string&) { return run_with(site_capsa(), {}, a); }},
      {"capsa -c FILE",
       [](const Attempt& a, const std::string& f) {
         return run_with(site_capsa(), {"-c", f}, a);
       }},
      {"capsa --config=FILE",
       [](const Attempt& a, const std::string& f) { return run_with(site_capsa(), {"--config=" + f}, a); }},
      {"CAPSA_CONFIG",
       [](const Attempt& a, const std::string& f) { return run_with(site_capsa(), {}, a, {"CAPSA_CONFIG=" + f}); }},
      {"APPTAINER_CONFIG_FILE",
       [](const Attempt& a, const std::string& f) {
         return run_with(site_capsa(), {}, a, {"APPTAINER_CONFIG_FILE=" + f});
       }},
      {"SINGULARITY_CONFIG_FILE",
       [](const Attempt& a, const std::string& f) {
         return run_with(site_capsa(), {}, a, {"SINGULARITY_CONFIG_FILE=" + f});
       }},
      {"capsa --build-config",
       [](const Attempt& a, const std::string&) { return run_with(site_capsa(), {"--build-config"}, a); }, false},
      {"capsa-full", [](const Attempt& a, const std::string&) { return run_with(site_capsa_full(), {}, a); }},
      {"capsa-full -c FILE",
       [](const Attempt& a, const std::string& f) {
         return run_with(site_capsa_full(), {"-c", f}, a);
       }},
      {"capsa-full CAPSA_CONFIG",
       [](const Attempt& a, const std::string& f) {
         return run_with(site_capsa_full(), {}, a, {"CAPSA_CONFIG=" + f});
       }},
      {"a symlink to capsa beside a file of theirs",
       [](const Attempt& a, const std::string& f) { return run_with(symlinked_capsa(f), {}, a); }},
  };
  return all;
}

// The lines of `err` other than warnings (--underlay's deprecation comes before the refusal).
int lines_but_warnings(const std::string& err) {
  int count = 0;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (!line.starts_with("WARNING:")) ++count;
  return count;
}

bool loosened(const Attempt& a, const test::ProcessResult& r) { return a.loosened ? a.loosened(r) : printed_loose(r); }

std::string shown(const test::ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out + "\nstderr: " + r.err;
}

// The restrictions above, by name: not made from restrictions(), which makes the
// attacker's files (listing the tests must not).
const std::vector<std::string> kNames = {"UserBindControl",
                                         "MountHome",
                                         "MountTmp",
                                         "MountProc",
                                         "MountSys",
                                         "MountDevpts",
                                         "ConfigResolvConf",
                                         "EnableOverlay",
                                         "EnableUnderlay",
                                         "EnableFusemount",
                                         "AllowContainerSif",
                                         "AllowContainerDir",
                                         "AllowContainerSquashfs",
                                         "AllowContainerExtfs",
                                         "LimitContainerPaths",
                                         "LimitContainerOwners",
                                         "LimitContainerGroups",
                                         "SessiondirMaxSize",
                                         "MemoryFsType",
                                         "AllowPidNs",
                                         "AllowUtsNs"};

class SiteRestrictions : public ::testing::TestWithParam<std::string> {};

TEST_P(SiteRestrictions, NoWayOfTheUsersLoosensIt) {
  write_site_conf("");  // the attacker's files are made on a site that allows them
  std::vector<Restriction> all = restrictions();
  auto it = std::find_if(all.begin(), all.end(), [](const Restriction& r) { return r.name == GetParam(); });
  ASSERT_NE(it, all.end());
  const Restriction& restriction = *it;
  OwnedDir files(attacker());
  const std::string users_file = files.write("loose.conf", restriction.users);

  // Where the site allows it, each attempt does what it should: the check below can fail.
  write_site_conf("");
  for (const Attempt& a : restriction.attempts) {
    test::ProcessResult r = capsa_as(attacker(), a.args, a.env);
    ASSERT_TRUE(loosened(a, r)) << a.what << " does not work even on a site that allows it\n" << shown(r);
  }

  write_site_conf(restriction.site);
  for (const Way& way : ways()) {
    for (const Attempt& a : restriction.attempts) {
      test::ProcessResult r = way.run(a, users_file);
      const std::string attempt = way.what + ", " + a.what;
      EXPECT_FALSE(loosened(a, r)) << attempt << " loosened `" << restriction.site << "`\n" << shown(r);
      if (restriction.refusal.empty() || (a.binds_home && !way.mounts_home)) continue;
      // Refused in one line naming the directive, with nothing run.
      EXPECT_EQ(r.exit_code, 1) << attempt << "\n" << shown(r);
      EXPECT_NE(r.err.find("`" + restriction.refusal), std::string::npos) << attempt << "\n" << shown(r);
      EXPECT_EQ(lines_but_warnings(r.err), 1) << attempt << "\n" << shown(r);
      EXPECT_EQ(r.out, "") << attempt;
    }
  }
  write_site_conf("");
}

INSTANTIATE_TEST_SUITE_P(, SiteRestrictions, ::testing::ValuesIn(kNames),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

// Every restriction above has a test instance, and no instance names none.
TEST(SiteRestrictionsTable, EveryRestrictionIsInstantiated) {
  write_site_conf("");
  std::vector<std::string> names;
  for (const Restriction& r : restrictions()) names.push_back(r.name);
  EXPECT_EQ(names, kNames);
}

// `capsa build --bind` binds into the container %post and %test run in: a user bind too.
TEST(SiteRestrictionsBuild, BuildBindsAreUserBinds) {
  write_site_conf("");
  OwnedDir dir(attacker());
  const std::string image = image_owned_by(attacker(), dir, "busybox.sif");
  owned_dir(attacker(), dir / "data");
  dir.write("data/marker", std::string(kLoose) + "\n");
  const std::string def =
      dir.write("t.def", "Bootstrap: localimage\nFrom: " + image + "\n\n%post\n  cat /mnt/marker\n");
  const std::string users_file = dir.write("loose.conf", "user bind control = yes\n");
  const std::vector<std::string> build = {"build", "--force", "--bind", dir / "data:/mnt", dir / "out.sif", def};
  test::ProcessResult r = capsa_as(attacker(), build);
  ASSERT_NE(r.out.find(kLoose), std::string::npos) << "the build's bind works where the site allows it\n" << shown(r);

  write_site_conf("user bind control = no\n");
  for (const Way& way : ways()) {
    r = way.run(Attempt{"build --bind", build}, users_file);
    EXPECT_EQ(r.out.find(kLoose), std::string::npos) << way.what << "\n" << shown(r);
    EXPECT_EQ(r.exit_code, 1) << way.what << "\n" << shown(r);
    EXPECT_NE(r.err.find("`user bind control = no`"), std::string::npos) << way.what << "\n" << shown(r);
  }
  write_site_conf("");
}

// `exec instance://NAME` mounts no image: it joins the caller's instance, whose image was
// checked when it started. With a `limit container ...` directive the join worked nowhere
// (realpath("instance://...") failed: issue 45), and so neither did the SPANK plugin's
// tasks. The recorded image is checked again, so that a limit added since holds.
TEST(SiteRestrictionsInstance, JoiningAnInstanceWorksUnderALimitAndTheLimitStillHolds) {
  OwnedDir dir(attacker());
  const std::string image = image_owned_by(attacker(), dir, "busybox.sif");
  const std::string name = "capsa-site-limit";
  write_site_conf("limit container paths = " + dir.path() + "\nlimit container owners = " + attacker().name + "\n");
  test::ProcessResult started = capsa_as(attacker(), {"instance", "start", image, name});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  struct Stop {
    std::string name;
    ~Stop() { capsa_as(attacker(), {"instance", "stop", name}); }
  } stop{name};

  test::ProcessResult joined = capsa_as(attacker(), {"exec", "instance://" + name, "echo", "joined"});
  EXPECT_EQ(joined.exit_code, 0) << joined.err;
  EXPECT_EQ(joined.out, "joined\n") << joined.err;
  joined = run_as(attacker(), {site_capsa_full(), "exec", "instance://" + name, "echo", "joined"});
  EXPECT_EQ(joined.out, "joined\n") << joined.err;

  // The administrator narrows the limit: the running instance's image is outside it now.
  write_site_conf("limit container paths = /nonexistent/capsa-site-images\n");
  test::ProcessResult refused = capsa_as(attacker(), {"exec", "instance://" + name, "echo", "joined"});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("`limit container paths`"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("instance " + name), std::string::npos) << refused.err;
  write_site_conf("");
}

}  // namespace
}  // namespace capsa::adversarial
