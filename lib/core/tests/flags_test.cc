#include "ringmaster/core/flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace ringmaster::core {
namespace {

struct Opts {
  std::string config;
  int64_t epochs = 5;
  double lr = 0.1;
  bool verbose = false;
};

FlagSet makeFlags(Opts* o) {
  FlagSet f("prog", "does things");
  f.addString("config", &o->config, "config file");
  f.addInt("epochs", &o->epochs, "epochs", "RM_TEST_EPOCHS");
  f.addDouble("lr", &o->lr, "learning rate");
  f.addBool("verbose", &o->verbose, "talk more");
  return f;
}

TEST(FlagSet, ParsesAllForms) {
  Opts o;
  FlagSet f = makeFlags(&o);
  const char* argv[] = {"prog", "--config", "a.yaml", "--epochs=7", "--lr", "0.5", "--verbose"};
  bool help = false;
  ASSERT_TRUE(f.parse(7, argv, &help).ok());
  EXPECT_EQ(o.config, "a.yaml");
  EXPECT_EQ(o.epochs, 7);
  EXPECT_DOUBLE_EQ(o.lr, 0.5);
  EXPECT_TRUE(o.verbose);
  EXPECT_TRUE(f.wasSet("epochs"));
  EXPECT_FALSE(help);
}

TEST(FlagSet, UnknownFlagIsUsageErrorNamingIt) {
  Opts o;
  FlagSet f = makeFlags(&o);
  const char* argv[] = {"prog", "--epoch=3"};
  bool help = false;
  Status s = f.parse(2, argv, &help);
  EXPECT_EQ(s.code(), Code::kUsage);
  EXPECT_NE(s.message().find("--epoch"), std::string::npos);
}

TEST(FlagSet, BadNumberIsUsageErrorNamingFlagAndValue) {
  Opts o;
  FlagSet f = makeFlags(&o);
  const char* argv[] = {"prog", "--epochs=five"};
  bool help = false;
  Status s = f.parse(2, argv, &help);
  EXPECT_EQ(s.exitCode(), 2);
  EXPECT_EQ(s.message(), "flag --epochs: expected an integer, got 'five'");
}

TEST(FlagSet, EnvironmentFillsAbsentFlagOnly) {
  Opts o;
  FlagSet f = makeFlags(&o);
  setenv("RM_TEST_EPOCHS", "9", 1);
  const char* argv[] = {"prog"};
  bool help = false;
  ASSERT_TRUE(f.parse(1, argv, &help).ok());
  EXPECT_EQ(o.epochs, 9);
  Opts o2;
  FlagSet f2 = makeFlags(&o2);
  const char* argv2[] = {"prog", "--epochs=3"};
  ASSERT_TRUE(f2.parse(2, argv2, &help).ok());
  EXPECT_EQ(o2.epochs, 3);
  unsetenv("RM_TEST_EPOCHS");
}

TEST(FlagSet, HelpListsFlagsWithDefaults) {
  Opts o;
  FlagSet f = makeFlags(&o);
  const char* argv[] = {"prog", "--help"};
  bool help = false;
  ASSERT_TRUE(f.parse(2, argv, &help).ok());
  EXPECT_TRUE(help);
  std::string text = f.help();
  EXPECT_NE(text.find("--epochs=<int>"), std::string::npos);
  EXPECT_NE(text.find("(default 5)"), std::string::npos);
  EXPECT_NE(text.find("[env RM_TEST_EPOCHS]"), std::string::npos);
}

TEST(FlagSet, NegatedBool) {
  Opts o;
  o.verbose = true;
  FlagSet f = makeFlags(&o);
  const char* argv[] = {"prog", "--no-verbose"};
  bool help = false;
  ASSERT_TRUE(f.parse(2, argv, &help).ok());
  EXPECT_FALSE(o.verbose);
}

}  // namespace
}  // namespace ringmaster::core
