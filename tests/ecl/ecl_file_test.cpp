// ecl.toml as capsa reads it: Apptainer's keys and meanings, and one error naming
// FILE:LINE for anything that would otherwise be silently ignored or misread.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ecl/ecl_file.hpp"
#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::ecl {
namespace {

constexpr const char* kKey = "12045C8C0B1004D058DE4BEDA20C27EE7FF7BA84";

std::string error_of(const std::string& text, const std::string& path = "/etc/capsa/ecl.toml") {
  try {
    parse_ecl(text, path);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(EclFile, ReadsApptainersKeys) {
  test::TempDir dir;
  const std::string images = std::filesystem::canonical(dir.path()).string();
  auto list =
      parse_ecl(std::string("activated = true\nlegacyinsecure = true\n\n") +
                    "[[execgroup]]\n  tagname = \"site\"\n  mode = \"whitestrict\"\n  dirpath = \"" + images +
                    "\"\n  keyfp = [\"" + kKey + "\", \"" + std::string(40, 'a') + "\"]\n\n" +
                    "[[execgroup]]\n  tagname = \"rest\"\n  mode = \"blacklist\"\n  keyfp = [\"" + kKey + "\"]\n",
                "/x/ecl.toml");
  EXPECT_TRUE(list.activated);
  EXPECT_TRUE(list.legacy);
  ASSERT_EQ(list.groups.size(), 2u);
  EXPECT_EQ(list.groups[0].tagname, "site");
  EXPECT_EQ(list.groups[0].mode, Mode::whitestrict);
  EXPECT_EQ(list.groups[0].dirpath, images);
  EXPECT_EQ(list.groups[0].keyfps, (std::vector<std::string>{kKey, std::string(40, 'A')}));
  EXPECT_EQ(list.groups[0].line, 4);
  EXPECT_EQ(list.groups[1].mode, Mode::blacklist);
  EXPECT_EQ(list.groups[1].line, 10);
  EXPECT_EQ(list.group_for(images), &list.groups[0]);
  EXPECT_EQ(list.group_for(images + "/sub"), &list.groups[1]);  // exact directory, as Apptainer
  // No activated: off, as in Apptainer.
  EXPECT_FALSE(parse_ecl("legacyinsecure = false\n", "f").activated);
}

TEST(EclFile, MalformedOrMisspeltFilesNameFileAndLine) {
  const std::string group =
      "[[execgroup]]\ntagname = \"t\"\nmode = \"whitelist\"\nkeyfp = [\"" + std::string(kKey) + "\"]\n";
  EXPECT_EQ(error_of("activated = true\n[[execgroup]\n").rfind("/etc/capsa/ecl.toml:2: ", 0), 0u)
      << error_of("activated = true\n[[execgroup]\n");
  EXPECT_EQ(error_of("activate = true\n"),
            "/etc/capsa/ecl.toml:1: unknown key \"activate\" (an ecl.toml has activated, legacyinsecure and "
            "[[execgroup]] tables)");
  EXPECT_EQ(error_of("activated = \"yes\"\n"), "/etc/capsa/ecl.toml:1: activated must be true or false");
  EXPECT_EQ(error_of("activated = true\n" + group + "keyfps = []\n"),
            "/etc/capsa/ecl.toml:6: unknown key \"keyfps\" in an execgroup (it has tagname, mode, dirpath and keyfp)");
  EXPECT_EQ(error_of("[[execgroup]]\ntagname = \"t\"\nmode = \"whitelst\"\nkeyfp = [\"" + std::string(kKey) + "\"]\n"),
            "/etc/capsa/ecl.toml:3: mode \"whitelst\": expected whitelist, whitestrict or blacklist");
  EXPECT_EQ(error_of("[[execgroup]]\ntagname = \"t\"\nmode = \"whitelist\"\nkeyfp = [\"7FF7BA84\"]\n"),
            "/etc/capsa/ecl.toml:4: keyfp \"7FF7BA84\" is no OpenPGP fingerprint (40 hex digits, as `capsa key list` "
            "shows)");
  EXPECT_EQ(error_of("[[execgroup]]\nmode = \"whitelist\"\nkeyfp = [\"" + std::string(kKey) + "\"]\n"),
            "/etc/capsa/ecl.toml:1: execgroup has no tagname (refusals name the rule by it)");
  EXPECT_EQ(error_of("[[execgroup]]\ntagname = \"t\"\nkeyfp = [\"" + std::string(kKey) + "\"]\n"),
            "/etc/capsa/ecl.toml:1: execgroup \"t\" has no mode (whitelist, whitestrict or blacklist)");
  EXPECT_EQ(error_of("[[execgroup]]\ntagname = \"t\"\nmode = \"blacklist\"\n"),
            "/etc/capsa/ecl.toml:1: execgroup \"t\" lists no keyfp");
  EXPECT_EQ(error_of(group + group),
            "/etc/capsa/ecl.toml:5: execgroup \"t\": a second execgroup without dirpath (a "
            "dirpath may appear in one execgroup only)");
  EXPECT_EQ(error_of("execgroup = 3\n"), "/etc/capsa/ecl.toml:1: execgroup must be [[execgroup]] tables");
}

TEST(EclFile, DirpathsMustBeResolvedAbsolutePaths) {
  test::TempDir dir;
  const std::string real = std::filesystem::canonical(dir.path()).string();
  std::filesystem::create_directory(real + "/images");
  std::filesystem::create_directory_symlink(real + "/images", real + "/link");
  auto with = [](const std::string& dirpath) {
    return error_of("[[execgroup]]\ntagname = \"t\"\nmode = \"whitelist\"\ndirpath = \"" + dirpath + "\"\nkeyfp = [\"" +
                    kKey + "\"]\n");
  };
  EXPECT_EQ(with(real + "/images"), "(parsed)");
  EXPECT_EQ(with("images"), "/etc/capsa/ecl.toml:4: dirpath images is not an absolute path");
  EXPECT_EQ(with(real + "/link"), "/etc/capsa/ecl.toml:4: dirpath " + real + "/link must be written as " + real +
                                      "/images (symbolic links resolved, no trailing /)");
  EXPECT_EQ(with(real + "/images/"), "/etc/capsa/ecl.toml:4: dirpath " + real + "/images/ must be written as " + real +
                                         "/images (symbolic links resolved, no trailing /)");
  EXPECT_EQ(with(real + "/gone"),
            "/etc/capsa/ecl.toml:4: dirpath " + real + "/gone does not exist (No such file or directory)");
  const std::string second = "[[execgroup]]\ntagname = \"u\"\nmode = \"blacklist\"\ndirpath = \"" + real +
                             "/images\"\nkeyfp = [\"" + kKey + "\"]\n";
  EXPECT_NE(error_of(second + second).find(":6: execgroup \"u\": dirpath " + real + "/images is another execgroup's"),
            std::string::npos);
}

TEST(EclFile, OnlyRootOrTheInstallationsOwnerMayWriteIt) {
  EXPECT_NO_THROW(check_ecl_owner("/e", 0, 0644, 0));
  EXPECT_NO_THROW(check_ecl_owner("/e", 1000, 0600, 1000));  // a user's own installation
  try {
    check_ecl_owner("/e", 1000, 0644, 0);
    ADD_FAILURE() << "owned by a user";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "/e is owned by uid 1000, and an execution control list must be owned by root: chown root /e");
  }
  for (mode_t mode : {0664, 0646}) {
    try {
      check_ecl_owner("/e", 0, mode, 0);
      ADD_FAILURE() << "mode " << mode;
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(),
                   "/e may be written by group or others, and an execution control list must not: chmod go-w /e");
    }
  }
  // read_ecl applies the rule to the file itself.
  test::TempDir dir;
  const std::string path = dir / "ecl.toml";
  std::ofstream(path) << "activated = true\n";
  ::chmod(path.c_str(), 0666);
  EXPECT_THROW(read_ecl(path), Error);
  ::chmod(path.c_str(), 0644);
  if (::geteuid() == 0) {
    EXPECT_TRUE(read_ecl(path).activated);
    ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    EXPECT_THROW(read_ecl(path), Error);
  } else {
    // The user's file, and this test binary (the running capsa, for the rule) is root's.
    EXPECT_THROW(read_ecl(path), Error);
  }
}

}  // namespace
}  // namespace capsa::ecl
