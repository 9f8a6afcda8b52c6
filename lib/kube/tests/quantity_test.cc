// Quantity parsing: exact canonical values for the forms Kubernetes accepts, errors otherwise.

#include "ringmaster/kube/quantity.h"

#include <gtest/gtest.h>

#include <limits>

#include "ringmaster/kube/codec.h"

namespace ringmaster::kube {
namespace {

struct Row {
  const char* text;
  int64_t value;  // rounded up
  int64_t milli;  // rounded up
  double as_double;
};

TEST(Quantity, ParsesTheKubernetesForms) {
  const Row kRows[] = {
      {"100m", 1, 100, 0.1},
      {"1", 1, 1000, 1.0},
      {"1.5", 2, 1500, 1.5},
      {"2Gi", 2LL << 30, (2LL << 30) * 1000, 2147483648.0},
      {"500Mi", 500LL << 20, (500LL << 20) * 1000, 524288000.0},
      {"1e3", 1000, 1000000, 1000.0},
      {"1E3", 1000, 1000000, 1000.0},
      {"2.5e-3", 1, 3, 0.0025},
      {"0", 0, 0, 0.0},
      {"0.5", 1, 500, 0.5},
      {".5", 1, 500, 0.5},
      {"16", 16, 16000, 16.0},
      {"64Gi", 64LL << 30, (64LL << 30) * 1000, 68719476736.0},
      {"1k", 1000, 1000000, 1000.0},
      {"1M", 1000000, 1000000000, 1e6},
      {"1E", 1000000000000000000LL, std::numeric_limits<int64_t>::max(), 1e18},
      {"250u", 1, 1, 0.00025},
      {"1n", 1, 1, 1e-9},
      {"-1", -1, -1000, -1.0},
      {"-100m", 0, -100, -0.1},
      {"+2", 2, 2000, 2.0},
      {"1.5Ki", 1536, 1536000, 1536.0},
      {"8Ei", std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max(),
       9223372036854775808.0},
  };
  for (const Row& row : kRows) {
    core::Result<Quantity> q = Quantity::parse(row.text);
    ASSERT_TRUE(q.ok()) << row.text << ": " << q.status().toString();
    EXPECT_EQ(q->toString(), row.text);
    EXPECT_EQ(q->value(), row.value) << row.text;
    EXPECT_EQ(q->milliValue(), row.milli) << row.text;
    EXPECT_DOUBLE_EQ(q->asDouble(), row.as_double) << row.text;
  }
}

TEST(Quantity, RejectsMalformedText) {
  for (const char* bad : {"abc", "", "m", "1.2.3", "5Gb", "1 Gi", "--1", "1e", "1e+", "Gi", "1ki",
                          "1234567890123456789", "0x10", "1e3m"}) {
    core::Result<Quantity> q = Quantity::parse(bad);
    EXPECT_FALSE(q.ok()) << "accepted \"" << bad << "\"";
    if (!q.ok()) {
      EXPECT_NE(q.status().message().find("expected a quantity"), std::string::npos)
          << q.status().message();
    }
  }
}

TEST(Quantity, BuiltFromNumbers) {
  EXPECT_EQ(Quantity(3).toString(), "3");
  EXPECT_EQ(Quantity::fromMilli(500).toString(), "500m");
  EXPECT_EQ(Quantity::fromMilli(500).milliValue(), 500);
  EXPECT_EQ(Quantity::fromMilli(2000).toString(), "2");
  EXPECT_EQ(Quantity().value(), 0);
}

TEST(Quantity, JsonNumberStaysANumber) {
  core::Result<Quantity> q = decode<Quantity>(nlohmann::json(1));
  ASSERT_TRUE(q.ok()) << q.status().toString();
  EXPECT_EQ(q->value(), 1);
  EXPECT_EQ(encode(*q), nlohmann::json(1));
  core::Result<Quantity> half = decode<Quantity>(nlohmann::json(0.5));
  ASSERT_TRUE(half.ok()) << half.status().toString();
  EXPECT_EQ(half->milliValue(), 500);
  EXPECT_EQ(encode(*half), nlohmann::json(0.5));
  EXPECT_EQ(encode(Quantity::parse("1Gi").value()), nlohmann::json("1Gi"));
}

}  // namespace
}  // namespace ringmaster::kube
