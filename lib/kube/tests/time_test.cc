// Time and MicroTime parse and format as the API server does.

#include "ringmaster/kube/time.h"

#include <gtest/gtest.h>

#include "ringmaster/kube/codec.h"

namespace ringmaster::kube {
namespace {

using nlohmann::json;

TEST(Time, ParsesAndFormatsUtcSeconds) {
  core::Result<Time> t = Time::parse("2026-11-22T10:00:00Z");
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(t->unixSeconds(), 1795341600);
  EXPECT_EQ(t->toString(), "2026-11-22T10:00:00Z");
  EXPECT_EQ(Time::fromUnixSeconds(0).toString(), "1970-01-01T00:00:00Z");
  EXPECT_EQ(Time::fromUnixSeconds(1795312863).toString(), "2026-11-22T02:01:03Z");
}

TEST(Time, AcceptsOffsetsAndFractionsAndNormalizesToUtcSeconds) {
  EXPECT_EQ(Time::parse("2026-11-22T11:30:00+01:30")->toString(), "2026-11-22T10:00:00Z");
  EXPECT_EQ(Time::parse("2026-11-21T23:00:00-11:00")->toString(), "2026-11-22T10:00:00Z");
  EXPECT_EQ(Time::parse("2026-11-22T10:00:00.999999999Z")->toString(), "2026-11-22T10:00:00Z");
}

TEST(Time, RejectsWhatIsNotRfc3339) {
  for (const char* bad : {"", "2026-11-22", "2026-11-22T10:00:00", "2026-11-22 10:00:00Z",
                          "2026-02-30T10:00:00Z", "2026-11-22T24:00:00Z", "2026-11-22T10:00:00.Z",
                          "2026-11-22T10:00:00Z ", "1795341600", "2026-11-22T10:00:00+0100"}) {
    EXPECT_FALSE(Time::parse(bad).ok()) << "accepted \"" << bad << "\"";
  }
}

TEST(Time, ConstructedFromAClockKeepsWholeSeconds) {
  auto tp = std::chrono::system_clock::time_point(std::chrono::milliseconds(1795341600999));
  EXPECT_EQ(Time(tp), Time::fromUnixSeconds(1795341600));
}

TEST(Time, ZeroIsJsonNull) {
  EXPECT_TRUE(Time().isZero());
  EXPECT_EQ(encode(Time()), json(nullptr));
  core::Result<Time> zero = decode<Time>(json(nullptr));
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->isZero());
  EXPECT_FALSE(decode<Time>(json(5)).ok());
}

TEST(MicroTime, ParsesAndFormatsSixDigits) {
  core::Result<MicroTime> t = MicroTime::parse("2026-11-22T02:01:03.874063Z");
  ASSERT_TRUE(t.ok()) << t.status().toString();
  EXPECT_EQ(t->unixMicros(), 1795312863874063);
  EXPECT_EQ(t->toString(), "2026-11-22T02:01:03.874063Z");
  EXPECT_EQ(MicroTime::fromUnixMicros(1795312863000001).toString(), "2026-11-22T02:01:03.000001Z");
  EXPECT_EQ(MicroTime::parse("2026-11-22T03:01:03.874063+01:00")->toString(),
            "2026-11-22T02:01:03.874063Z");
}

TEST(MicroTime, RejectsTheFormsTheApiServerRejects) {
  // Accepted forms: no fraction, 3 digits, 9 digits with an offset, a number string.
  for (const char* bad : {"2026-11-22T02:01:03Z", "2026-11-22T02:01:03.123Z",
                          "2026-11-22T03:01:03.123456789+01:00", "1763776863"}) {
    EXPECT_FALSE(MicroTime::parse(bad).ok()) << "accepted \"" << bad << "\"";
  }
}

TEST(MicroTime, ClockTimeKeepsMicroseconds) {
  auto tp = std::chrono::system_clock::time_point(std::chrono::nanoseconds(1795312863874063999));
  EXPECT_EQ(MicroTime(tp).toString(), "2026-11-22T02:01:03.874063Z");
  EXPECT_LT(MicroTime(tp), MicroTime::fromUnixMicros(1795312863874064));
}

}  // namespace
}  // namespace ringmaster::kube
