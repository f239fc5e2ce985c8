#include "util/progress.hpp"

#include <gtest/gtest.h>

namespace capsa {
namespace {

using namespace std::chrono_literals;

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  Progress::Clock fn() {
    return [this] { return now; };
  }
};

TEST(Progress, LogModeWritesOneLinePerTaskEventAndAPeriodicTotal) {
  FakeClock clock;
  std::string out;
  Progress progress(Progress::Mode::Log, [&](const std::string& s) { out += s; }, clock.fn(), 10s);
  progress.start("blob sha256:aaaa", 2 << 20);
  progress.update("blob sha256:aaaa", 1 << 20);  // before the interval: silent
  clock.now += 11s;
  progress.update("blob sha256:aaaa", 1 << 20);
  clock.now += 1s;
  progress.finish("blob sha256:aaaa");
  EXPECT_EQ(out,
            "blob sha256:aaaa: started (2.0 MiB)\n"
            "total: 1.0 MiB / 2.0 MiB, 93.1 KiB/s, ETA 0:11\n"
            "blob sha256:aaaa: done, 2.0 MiB in 0:12 (170.7 KiB/s)\n");
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << "no terminal control codes in logs";
}

TEST(Progress, TerminalModeRedrawsALiveBlockWithRateAndEta) {
  FakeClock clock;
  std::string out;
  Progress progress(Progress::Mode::Terminal, [&](const std::string& s) { out += s; }, clock.fn());
  progress.start("layer 1/2", 100 << 20);
  clock.now += 2s;
  progress.update("layer 1/2", 50 << 20);
  EXPECT_NE(out.find("layer 1/2 [############............] 50.0 MiB / 100.0 MiB  25.0 MiB/s  ETA 0:02"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\x1b[1A\x1b[2K"), std::string::npos) << "the previous block is erased";
}

TEST(Progress, QuietModePrintsNothing) {
  std::string out;
  Progress progress(Progress::Mode::Quiet, [&](const std::string& s) { out += s; });
  progress.start("x", 10);
  progress.update("x", 5);
  progress.note("warning");
  progress.finish("x");
  EXPECT_EQ(out, "");
}

// Messages of util/log.hpp while a terminal display lives: above it, which is redrawn.
TEST(Progress, OnATerminalMessagesArePrintedAboveTheLiveLines) {
  FakeClock clock;
  std::string out;
  log::set_sink([&](log::Level, std::string_view message) { out += "<" + std::string(message) + ">\n"; });
  {
    Progress progress(Progress::Mode::Terminal, [&](const std::string& s) { out += s; }, clock.fn());
    progress.start("layer 1/1", 100);
    out.clear();
    log::warning("device node skipped");
    EXPECT_EQ(out,
              "\x1b[1A\x1b[2K\x1b[1A\x1b[2K"  // the task's line and the total, erased
              "<device node skipped>\n"
              "layer 1/1 [........................] 0 B / 100 B\n"
              "total: 0 B / 100 B\n");
    out.clear();
  }
  log::warning("after");
  EXPECT_EQ(out, "<after>\n") << "the display's hook is gone with it";
  log::set_sink({});
}

TEST(Progress, QuietOrLogModeLeavesMessagesAlone) {
  for (Progress::Mode mode : {Progress::Mode::Quiet, Progress::Mode::Log}) {
    std::string out, logged;
    log::set_sink([&](log::Level, std::string_view message) { logged += message; });
    Progress progress(mode, [&](const std::string& s) { out += s; });
    progress.start("x", 10);
    log::warning("shown");
    EXPECT_EQ(logged, "shown") << "quiet progress is no quiet warnings";
    EXPECT_EQ(out.find('\x1b'), std::string::npos);
    log::set_sink({});
  }
}

TEST(Progress, ModeFollowsTheTerminal) {
  EXPECT_EQ(Progress::detect_mode(true, 2), Progress::Mode::Quiet);
  EXPECT_EQ(Progress::detect_mode(false, -1), Progress::Mode::Log);  // not a TTY
}

TEST(Progress, Formats) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(20ULL << 30), "20.0 GiB");
  EXPECT_EQ(format_duration(std::chrono::seconds(125)), "2:05");
  EXPECT_EQ(format_duration(std::chrono::seconds(3725)), "1:02:05");
}

}  // namespace
}  // namespace capsa
