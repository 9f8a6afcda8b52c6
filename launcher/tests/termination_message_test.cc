#include "launcher/termination_message.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "ringmaster/kube/termination_message.h"

namespace ringmaster::launcher {
namespace {

TEST(ErrorLineText, Table) {
  struct Case {
    std::string line;
    std::optional<std::string> want;
  };
  const Case cases[] = {
      {"2026-11-22T10:00:00.123Z E CORE    [fmnist rank 0/2] dataset: no such file\n",
       "E CORE [fmnist rank 0/2] dataset: no such file"},
      {"2026-11-22T10:00:00.123Z E DATA    no prefix here", "E DATA no prefix here"},
      {"2026-11-22T10:00:00.123Z W CORE    [j] only a warning\n", std::nullopt},
      {"2026-11-22T10:00:00.123Z I STEP    [j] epoch 1\n", std::nullopt},
      {"E CORE no timestamp\n", std::nullopt},
      {"Traceback (most recent call last):\n", std::nullopt},
      {"", std::nullopt},
      {"2026-11-22T10:00:00.123Z E", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(errorLineText(c.line), c.want) << c.line;
}

TEST(ErrorLines, TheMostTellingLineOfAProcesssStderrWins) {
  struct Case {
    const char* name;
    std::vector<std::string> lines;
    std::string want;
  };
  const Case cases[] = {
      {"nothing", {}, ""},
      {"blank lines only", {"\n", "   \n"}, ""},
      {"last line",
       {"starting\n", "terminate called after throwing 'std::bad_alloc'\n", "\n"},
       "terminate called after throwing 'std::bad_alloc'"},
      {"python traceback",
       {"Traceback (most recent call last):\n", "  File \"/app/train.py\", line 9, in <module>\n",
        "    raise ValueError(\"bad shard\")\n", "ValueError: bad shard\n",
        "[W ProcessGroupGloo.cpp:1] Warning: shutting down\n"},
       "ValueError: bad shard"},
      {"chained tracebacks: the last",
       {"Traceback (most recent call last):\n", "  File \"a.py\", line 1\n", "KeyError: 'x'\n",
        "\n", "During handling of the above exception, another exception occurred:\n", "\n",
        "Traceback (most recent call last):\n", "  File \"a.py\", line 3\n",
        "RuntimeError: no x\n"},
       "RuntimeError: no x"},
      {"the core format wins",
       {"2026-11-22T10:00:00.123Z E CORE    [j rank 0/2] dataset: no such file\n",
        "Traceback (most recent call last):\n", "  File \"a.py\"\n", "ValueError: later\n"},
       "E CORE [j rank 0/2] dataset: no such file"},
  };
  for (const Case& c : cases) {
    ErrorLines errors;
    for (const std::string& line : c.lines) errors.feed(line);
    EXPECT_EQ(errors.best(), c.want) << c.name;
  }
  ErrorLines long_line;
  long_line.feed(std::string(5000, 'x') + "\n");
  EXPECT_EQ(long_line.best().size(), ErrorLines::kMaxLineBytes);
}

TEST(FailureMessage, ReasonAndErrorLineCappedToTheKubeletsLimit) {
  EXPECT_EQ(failureMessage("rank 1 exited with code 1", "E CORE [j rank 1/2] bad"),
            "rank 1 exited with code 1: E CORE [j rank 1/2] bad");
  EXPECT_EQ(failureMessage("hang: rank 3 made no progress", ""), "hang: rank 3 made no progress");
  const std::string long_line = "E CORE " + std::string(10000, 'x');
  EXPECT_EQ(failureMessage("rank 0 exited with code 1", long_line).size(),
            kube::kMaxTerminationMessageBytes);
  // Never cut inside a UTF-8 character.
  std::string utf8;
  while (utf8.size() < 5000) utf8 += "\xc3\xa9";  // é
  const std::string cut = failureMessage("r", utf8);
  EXPECT_LE(cut.size(), kube::kMaxTerminationMessageBytes);
  EXPECT_EQ((cut.size() - 3) % 2, 0u);  // "r: " then whole characters
}

TEST(SummaryMessage, CompactsAnObjectAndRefusesOthers) {
  EXPECT_EQ(summaryMessage("{\n  \"epochs\": 5,\n  \"testAccuracy\": 0.8862\n}\n"),
            R"({"epochs":5,"testAccuracy":0.8862})");
  EXPECT_FALSE(summaryMessage("[1, 2]").has_value());
  EXPECT_FALSE(summaryMessage("{not json").has_value());
  EXPECT_FALSE(summaryMessage("{\"big\": \"" + std::string(5000, 'x') + "\"}").has_value());
}

TEST(WriteTerminationMessage, ReplacesAnExistingFileAndNeverCreatesOne) {
  char tmpl[] = "/tmp/rm-launcher-msg-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string path = dir + "/termination-log";
  EXPECT_FALSE(writeTerminationMessage(path, "x").ok());
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  std::ofstream(path) << "an older, longer message";
  ASSERT_TRUE(writeTerminationMessage(path, "new").ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "new");
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace ringmaster::launcher
