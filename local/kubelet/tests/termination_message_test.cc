#include "local/kubelet/termination_message.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "ringmaster/kube/termination_message.h"
#include "temp_dir.h"

namespace ringmaster::local::kubelet {
namespace {

namespace fs = std::filesystem;

TEST(TerminationMessage, DefaultsOfPathAndPolicy) {
  kube::Container c;
  EXPECT_EQ(terminationMessagePath(c), "/dev/termination-log");
  EXPECT_EQ(terminationMessagePolicy(c), "File");
  c.termination_message_path = "/tmp/msg";
  c.termination_message_policy = "FallbackToLogsOnError";
  EXPECT_EQ(terminationMessagePath(c), "/tmp/msg");
  EXPECT_EQ(terminationMessagePolicy(c), "FallbackToLogsOnError");
}

TEST(TerminationMessage, DecisionTable) {
  const std::string fallback(kube::kTerminationMessagePolicyFallbackToLogsOnError);
  const std::string file(kube::kTerminationMessagePolicyFile);
  struct Case {
    std::string name, file_content, policy;
    int exit_code;
    std::string log_tail;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"file wins on success", "done\n", file, 0, "log", "done\n"},
      {"file wins on failure", "bad input", fallback, 1, "log", "bad input"},
      {"File policy never reads logs", "", file, 1, "E boom\n", std::nullopt},
      {"fallback on failure", "", fallback, 1, "E boom\n", "E boom\n"},
      {"no fallback on success", "", fallback, 0, "I fine\n", std::nullopt},
      {"fallback with an empty log", "", fallback, 2, "", std::nullopt},
      {"whitespace is a message", "\n", fallback, 1, "E boom\n", "\n"},
      {"a signal counts as failure", "", fallback, 137, "last\n", "last\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(terminationMessage(c.file_content, c.policy, c.exit_code, c.log_tail), c.want)
        << c.name;
  }
}

TEST(TerminationMessage, LogTailTakesLastLinesThenFirstBytes) {
  struct Case {
    std::string log;
    size_t lines, bytes;
    std::string want;
  };
  const Case cases[] = {
      {"", 80, 2048, ""},
      {"a\nb\nc\n", 2, 100, "b\nc\n"},
      {"a\nb\nc", 2, 100, "b\nc"},
      {"a\nb\nc\n", 5, 100, "a\nb\nc\n"},
      {"one line without newline", 80, 100, "one line without newline"},
      {"x\n0123456789\nabcdef\n", 2, 5, "01234"},  // the log reader stops after the cap
      {"\n\n\n", 2, 100, "\n\n"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(logTail(c.log, c.lines, c.bytes), c.want) << c.log;
  }
}

using test_support::TempDir;

void writeFile(const fs::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

TEST(ReadTerminationMessage, ReadsTheFileCappedAtItsEnd) {
  TempDir dir;
  const fs::path msg = messageFile(dir.path(), "worker");
  EXPECT_EQ(msg.filename(), "worker.termination-log");
  const std::string big = std::string(5000, 'a') + "THE END";
  writeFile(msg, big);
  auto got = readTerminationMessage(msg, dir.path() / "worker.log", "File", 0);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), kube::kMaxTerminationMessageBytes);
  EXPECT_EQ(got->substr(got->size() - 7), "THE END");
}

TEST(ReadTerminationMessage, FallsBackToTheLogTailOnFailure) {
  TempDir dir;
  const fs::path msg = messageFile(dir.path(), "worker");
  const fs::path log = dir.path() / "worker.log";
  writeFile(msg, "");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "line " + std::to_string(i) + "\n";
  writeFile(log, text);
  auto got = readTerminationMessage(msg, log, "FallbackToLogsOnError", 1);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->rfind("line 120\n", 0), 0u);  // the last 80 lines
  EXPECT_NE(got->find("line 199\n"), std::string::npos);
  EXPECT_FALSE(readTerminationMessage(msg, log, "FallbackToLogsOnError", 0).has_value());
  // No file at all (the container never had one): still the log.
  EXPECT_TRUE(readTerminationMessage(dir.path() / "absent", log, "FallbackToLogsOnError", 1));
}

}  // namespace
}  // namespace ringmaster::local::kubelet
