// graft/log.h: log levels parse and gate what a build prints; a warning is printed once per process.
#include <gtest/gtest.h>

#include <string>

#include "graft/log.h"

namespace graft {
namespace {

struct LevelGuard {  // restores the process-wide level the test changed
  LogLevel saved = log_level();
  ~LevelGuard() { set_log_level(saved); }
};

TEST(Log, ParsesTheThreeLevelsAndRefusesOthers) {
  EXPECT_EQ(*parse_log_level("quiet"), LogLevel::kQuiet);
  EXPECT_EQ(*parse_log_level("default"), LogLevel::kDefault);
  EXPECT_EQ(*parse_log_level("verbose"), LogLevel::kVerbose);
  auto bad = parse_log_level("loud");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("'loud'"), std::string::npos) << bad.status().to_string();
  EXPECT_STREQ(log_level_name(LogLevel::kVerbose), "verbose");
}

TEST(Log, LevelGatesBuildStages) {
  LevelGuard guard;
  set_log_level(LogLevel::kQuiet);
  EXPECT_FALSE(log_shows_stage("warning", true));
  EXPECT_FALSE(log_shows_stage("import", true));
  set_log_level(LogLevel::kDefault);
  EXPECT_TRUE(log_shows_stage("import", true)) << "the command line shows every stage by default";
  EXPECT_FALSE(log_shows_stage("import", false)) << "a library user sees only warnings and summaries";
  EXPECT_TRUE(log_shows_stage("warning", false));
  EXPECT_TRUE(log_shows_stage("cuda", false));
  set_log_level(LogLevel::kVerbose);
  EXPECT_TRUE(log_shows_stage("import", false));
}

TEST(Log, AWarningIsPrintedOncePerProcess) {
  LevelGuard guard;
  set_log_level(LogLevel::kDefault);
  ::testing::internal::CaptureStderr();
  log_warning_once("log_test: the same warning");
  log_warning_once("log_test: the same warning");
  log_warning_once("log_test: another warning");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "graft: warning: log_test: the same warning\ngraft: warning: log_test: another warning\n");
  set_log_level(LogLevel::kQuiet);
  ::testing::internal::CaptureStderr();
  log_warning_once("log_test: quiet warning");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace graft
