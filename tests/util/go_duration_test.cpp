// Go's duration syntax (util/go_duration.hpp), as --runscript-timeout takes it and as
// Apptainer's timeout message prints it back.
#include "util/go_duration.hpp"

#include <gtest/gtest.h>

#include "util/error.hpp"

namespace capsa {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(GoDuration, ParsesWhatTimeParseDurationTakes) {
  EXPECT_EQ(parse_go_duration("1s", "t"), seconds(1));
  EXPECT_EQ(parse_go_duration("1m", "t"), seconds(60));
  EXPECT_EQ(parse_go_duration("1m30s", "t"), seconds(90));
  EXPECT_EQ(parse_go_duration("1.5h", "t"), seconds(5400));
  EXPECT_EQ(parse_go_duration("500ms", "t"), milliseconds(500));
  EXPECT_EQ(parse_go_duration("2us", "t"), nanoseconds(2000));
  EXPECT_EQ(parse_go_duration("0", "t"), nanoseconds(0));
  EXPECT_EQ(parse_go_duration("-3s", "t"), seconds(-3));
}

TEST(GoDuration, RefusesWhatItDoesNot) {
  for (const char* text : {"", "1", "s", "1x", "1.2.3s", "ms", "1 s", "+"}) {
    try {
      parse_go_duration(text, "--runscript-timeout");
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--runscript-timeout"), std::string::npos) << e.what();
    }
  }
}

TEST(GoDuration, PrintsAsGoDoes) {
  EXPECT_EQ(format_go_duration(seconds(1)), "1s");
  EXPECT_EQ(format_go_duration(seconds(60)), "1m0s");
  EXPECT_EQ(format_go_duration(seconds(90)), "1m30s");
  EXPECT_EQ(format_go_duration(seconds(3600)), "1h0m0s");
  EXPECT_EQ(format_go_duration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(format_go_duration(milliseconds(500)), "500ms");
  EXPECT_EQ(format_go_duration(nanoseconds(0)), "0s");
}

}  // namespace
}  // namespace capsa
