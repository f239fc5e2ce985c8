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

// What a command line sets when parsed, with the options `args` selects (nullptr: all).
struct Parsed {
  std::size_t options = 0;
  std::vector<std::string> binds;
  bool contain = false, cleanenv = false, nv = false;
  std::vector<std::string> remaining;
};

Parsed parse_with(const Args& line, const Args* args) {
  CLI::App app;
  app.prefix_command();
  Parsed p;
  UsedOptions opts(app, args);
  opts.list("-B,--bind", p.binds, "binds");
  opts.flag("-c,--contain", p.contain, "contain");
  opts.flag("-e,--cleanenv", p.cleanenv, "cleanenv");
  opts.flag("--nv", p.nv, "nv");
  p.options = app.get_options().size();
  std::vector<std::string> reversed(line.rbegin(), line.rend());
  app.parse(reversed);
  p.remaining = app.remaining();
  return p;
}

// Each option a command line may use is set up, so that its parse is the same as with
// every option; the others are not.
TEST(UsedOptions, SetsUpWhatTheCommandLineNamesAndParsesItAsTheFullSetDoes) {
  for (const Args& line : {Args{"--bind", "/a:/b", "-ce", "img.sif", "true"}, Args{"-B/a:/b", "img.sif", "-e"},
                           Args{"--nv", "img.sif", "--bind", "x"}}) {
    SCOPED_TRACE(line.front());
    const Parsed some = parse_with(line, &line), all = parse_with(line, nullptr);
    EXPECT_LT(some.options, all.options) << "an unnamed flag is left out";
    EXPECT_EQ(some.binds, all.binds);
    EXPECT_EQ(some.contain, all.contain);
    EXPECT_EQ(some.cleanenv, all.cleanenv);
    EXPECT_EQ(some.nv, all.nv);
    EXPECT_EQ(some.remaining, all.remaining);
  }
  const Args line = {"--bind", "/a:/b", "-ce", "img.sif", "true"};
  const Parsed some = parse_with(line, &line);
  EXPECT_EQ(some.options, 4u) << "help and the three named";
  EXPECT_EQ(some.binds, Args{"/a:/b"});
  EXPECT_TRUE(some.contain && some.cleanenv && !some.nv);
  EXPECT_EQ(some.remaining, (Args{"img.sif", "true"}));
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
