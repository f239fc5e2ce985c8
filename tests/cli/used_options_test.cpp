// Which of an action's options the lean runner sets up for one command line
// (cli/used_options.hpp): every one the command line can use, and with -h/--help all.
#include "cli/used_options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace capsa::cli {
namespace {

using Args = std::vector<std::string>;

TEST(NamesUsed, ALongNameAloneOrWithItsValue) {
  EXPECT_TRUE(names_used("-B,--bind", {"exec", "--bind", "/a:/b", "img.sif", "true"}));
  EXPECT_TRUE(names_used("-B,--bind", {"exec", "--bind=/a:/b", "img.sif"}));
  EXPECT_FALSE(names_used("-B,--bind", {"exec", "--binder", "img.sif"})) << "another flag that starts alike";
  EXPECT_FALSE(names_used("--env", {"exec", "--env-file", "f", "img.sif"}));
  EXPECT_TRUE(names_used("--env-file", {"exec", "--env-file", "f", "img.sif"}));
}

TEST(NamesUsed, ALetterAloneAttachedOrCombined) {
  EXPECT_TRUE(names_used("-B,--bind", {"exec", "-B", "/a", "img.sif"}));
  EXPECT_TRUE(names_used("-B,--bind", {"exec", "-B/a:/b", "img.sif"}));
  EXPECT_TRUE(names_used("-e,--cleanenv", {"exec", "-ce", "img.sif"}));
  EXPECT_TRUE(names_used("-c,--contain", {"exec", "-ce", "img.sif"}));
  EXPECT_FALSE(names_used("-c,--contain", {"exec", "--cleanenv", "img.sif"})) << "a letter of a long flag";
  EXPECT_FALSE(names_used("-c,--contain", {"exec", "img.sif", "cat"}));
}

// Each option a command line may use is set up, so that its parse is the same as with
// every option; the others are not.
TEST(UsedOptions, SetsUpWhatTheCommandLineNamesAndParsesItAsTheFullSetDoes) {
  const Args args = {"--bind", "/a:/b", "-ce", "img.sif", "true"};
  CLI::App app;
  std::vector<std::string> binds;
  bool contain = false, cleanenv = false, nv = false;
  UsedOptions opts(app, &args);
  opts.list("-B,--bind", binds, "binds");
  opts.flag("-c,--contain", contain, "contain");
  opts.flag("-e,--cleanenv", cleanenv, "cleanenv");
  opts.flag("--nv", nv, "nv");
  EXPECT_EQ(app.get_options().size(), 4u) << "help and the three named";
  EXPECT_EQ(app.get_option_no_throw("--nv"), nullptr);
  app.prefix_command();
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  EXPECT_EQ(binds, std::vector<std::string>{"/a:/b"});
  EXPECT_TRUE(contain);
  EXPECT_TRUE(cleanenv);
  EXPECT_EQ(app.remaining(), (std::vector<std::string>{"img.sif", "true"}));
}

TEST(UsedOptions, HelpOrNoArgumentsSetUpEveryOption) {
  const Args help = {"exec", "--help"}, short_help = {"exec", "-h"};
  for (const Args* args : {static_cast<const Args*>(nullptr), &help, &short_help}) {
    CLI::App app;
    bool nv = false;
    UsedOptions opts(app, args);
    opts.flag("--nv", nv, "nv");
    EXPECT_NE(app.get_option_no_throw("--nv"), nullptr);
  }
}

}  // namespace
}  // namespace capsa::cli
