// The query of GET pods/{name}/log: sinceTime is an RFC 3339 time in any offset, as kubectl
// sends it (`kubectl logs --since-time=2026-11-22T12:00:00+02:00`), not only in UTC.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "local/apiserver/pod_log.h"
#include "ringmaster/kube/time.h"

namespace ringmaster::local {
namespace {

Request logRequest(QueryParams query) {
  Request r;
  r.method = "GET";
  r.path = "/api/v1/namespaces/default/pods/p/log";
  r.query = std::move(query);
  return r;
}

TEST(PodLogOptions, SinceTimeHonoursTheUtcOffset) {
  struct Case {
    std::string since_time;
    std::string utc;  // the same instant, in UTC
  };
  for (const Case& c : std::vector<Case>{
           {"2026-11-22T10:00:00Z", "2026-11-22T10:00:00Z"},
           {"2026-11-22T12:00:00+02:00", "2026-11-22T10:00:00Z"},
           {"2026-11-22T05:30:00-04:30", "2026-11-22T10:00:00Z"},
           {"2026-11-22T10:00:00.750Z", "2026-11-22T10:00:00Z"},
       }) {
    SCOPED_TRACE(c.since_time);
    auto options = parsePodLogOptions(logRequest({{"sinceTime", c.since_time}}));
    ASSERT_TRUE(options.ok());
    ASSERT_TRUE(options->since_time.has_value());
    EXPECT_EQ(*options->since_time, kube::Time::parse(c.utc)->timePoint());
  }
}

TEST(PodLogOptions, AMalformedSinceTimeIsABadRequest) {
  for (const std::string bad : {"yesterday", "2026-11-22", "2026-11-22T10:00:00+25:00"}) {
    SCOPED_TRACE(bad);
    auto options = parsePodLogOptions(logRequest({{"sinceTime", bad}}));
    ASSERT_FALSE(options.ok());
    EXPECT_EQ(options.error().code(), 400);
    EXPECT_NE(options.error().bodyText().find("couldn't parse sinceTime: " + bad),
              std::string::npos);
  }
}

}  // namespace
}  // namespace ringmaster::local
