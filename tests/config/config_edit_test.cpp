// `capsa config global` on the text of a file: config/config_edit.hpp, with Apptainer's
// semantics (internal/app/apptainer/config_global_linux.go).
#include "config/config_edit.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/temp_dir.hpp"
#include "util/error.hpp"

namespace capsa::config {
namespace {

const std::string kFile =
    "# site comment, kept\n"
    "mount home = yes\n"
    "#bind path = /opt\n"
    "bind path = /etc/localtime\n"
    "bind path = /etc/hosts\n"
    "\n"
    "#limit container paths = /scratch\n"
    "max loop devices = 256\n";

std::string edit(EditOp op, const std::string& directive, const std::string& value, const std::string& text = kFile) {
  return edit_config(text, op, directive, value, "capsa.conf");
}

std::string get(const std::string& text, const std::string& directive) {
  return config_value(parse_config(text, "capsa.conf", nullptr), directive);
}

std::string error_of(EditOp op, const std::string& directive, const std::string& value) {
  try {
    edit(op, directive, value);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigEdit, SetReplacesASingleValueInPlaceKeepingComments) {
  std::string out = edit(EditOp::set, "mount home", "no");
  EXPECT_EQ(out,
            "# site comment, kept\nmount home = no\n#bind path = /opt\nbind path = /etc/localtime\n"
            "bind path = /etc/hosts\n\n#limit container paths = /scratch\nmax loop devices = 256\n");
  EXPECT_EQ(get(out, "mount home"), "no");
}

TEST(ConfigEdit, SetAddsToAListNewValuesFirstAndNoneTwice) {
  std::string out = edit(EditOp::set, "bind path", "/scratch, /etc/hosts,/work");
  EXPECT_EQ(get(out, "bind path"), "/scratch,/work,/etc/localtime,/etc/hosts");
  EXPECT_NE(out.find("# site comment, kept\n"), std::string::npos);
}

TEST(ConfigEdit, SetOfAnAbsentDirectiveGoesAfterItsCommentedExample) {
  std::string out = edit(EditOp::set, "limit container paths", "/scratch,/global");
  EXPECT_NE(out.find("#limit container paths = /scratch\nlimit container paths = /scratch\n"
                     "limit container paths = /global\nmax loop devices"),
            std::string::npos)
      << out;
  EXPECT_EQ(get(out, "limit container paths"), "/scratch,/global");
  out = edit(EditOp::set, "memory fs type", "ramfs");
  EXPECT_TRUE(out.ends_with("max loop devices = 256\nmemory fs type = ramfs\n"))
      << "appended without an example: " << out;
}

TEST(ConfigEdit, UnsetRemovesMatchingValues) {
  std::string out = edit(EditOp::unset, "bind path", "/etc/hosts");
  EXPECT_EQ(get(out, "bind path"), "/etc/localtime");
  std::string both =
      edit_config("limit container paths = /a, /b, /c\n", EditOp::unset, "limit container paths", "/b", "capsa.conf");
  EXPECT_EQ(both, "limit container paths = /a, /c\n");
  EXPECT_EQ(edit(EditOp::unset, "mount home", "yes").find("mount home"), std::string::npos);
  EXPECT_EQ(error_of(EditOp::unset, "bind path", "/nowhere"), "value '/nowhere' not found for directive \"bind path\"");
}

TEST(ConfigEdit, ResetReturnsToTheDefault) {
  std::string out = edit(EditOp::reset, "max loop devices", "", edit(EditOp::set, "max loop devices", "8"));
  EXPECT_EQ(get(out, "max loop devices"), "256");
  out = edit(EditOp::reset, "bind path", "", edit(EditOp::set, "bind path", "/scratch"));
  EXPECT_EQ(get(out, "bind path"), "/etc/localtime,/etc/hosts");
  out = edit(EditOp::reset, "limit container paths", "", edit(EditOp::set, "limit container paths", "/x"));
  EXPECT_EQ(get(out, "limit container paths"), "");
}

TEST(ConfigEdit, GetPrintsValuesJoinedOrNothing) {
  EXPECT_EQ(get(kFile, "bind path"), "/etc/localtime,/etc/hosts");
  EXPECT_EQ(get(kFile, "max loop devices"), "256");
  EXPECT_EQ(get(kFile, "always use nv"), "");
}

TEST(ConfigEdit, BadRequestsAreOneLineErrors) {
  EXPECT_EQ(error_of(EditOp::set, "mount hme", "no"),
            "\"mount hme\" is not a valid configuration directive (did you mean \"mount home\"?)");
  EXPECT_EQ(error_of(EditOp::set, "mount home", ""), "you must specify a value for directive \"mount home\"");
  EXPECT_EQ(error_of(EditOp::set, "mount home", "perhaps"), "\"mount home = perhaps\": expected yes or no");
  EXPECT_EQ(error_of(EditOp::set, "mount home", "yes,no"), "\"mount home\" takes one value, not \"yes,no\"");
  EXPECT_THROW(get(kFile, "no such thing"), Error);
}

TEST(ConfigEdit, WriteReplacesTheFileKeepingItsMode) {
  test::TempDir dir;
  std::string path = dir.write("capsa.conf", kFile);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  write_config(path, "mount home = no\n");
  EXPECT_EQ(test::read_file(path), "mount home = no\n");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(ConfigEdit, WriteWithoutPermissionIsRefusedInOneLineAndChangesNothing) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write any file; the .user run checks this";
  test::TempDir dir;
  std::string path = dir.write("capsa.conf", kFile);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  try {
    write_config(path, "mount home = no\n");
    FAIL() << "written";
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("cannot change " + path + ": permission denied"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  EXPECT_EQ(test::read_file(path), kFile);
}

}  // namespace
}  // namespace capsa::config
