#include "local/https/request_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace ringmaster::local {
namespace {

// Hands out `step` bytes per read so every parser path meets split input; then EOF.
class StringSource : public ByteSource {
 public:
  explicit StringSource(std::string data, size_t step = 3) : data_(std::move(data)), step_(step) {}
  core::Result<size_t> read(char* buf, size_t n, SteadyClock::time_point) override {
    size_t take = std::min({n, step_, data_.size() - pos_});
    std::memcpy(buf, data_.data() + pos_, take);
    pos_ += take;
    return take;
  }

 private:
  std::string data_;
  size_t step_;
  size_t pos_ = 0;
};

const SteadyClock::time_point kNever = SteadyClock::time_point::max();

struct Parsed {
  ReadOutcome outcome;
  Request request;
};

Parsed parse(std::string text, RequestLimits limits = {}) {
  StringSource source(std::move(text));
  RequestReader reader(source, limits);
  Parsed parsed;
  parsed.outcome = reader.readHead(&parsed.request, kNever);
  if (parsed.outcome.ok()) parsed.outcome = reader.readBody(&parsed.request);
  return parsed;
}

TEST(RequestReader, ParsesRequestLineHeadersPathAndQuery) {
  Parsed p = parse(
      "GET /api/v1/namespaces/a%20b/pods?labelSelector=app%3Ddemo&watch=true HTTP/1.1\r\n"
      "Host: 127.0.0.1\r\nAccept:  application/json \r\n\r\n");
  ASSERT_TRUE(p.outcome.ok()) << p.outcome.message;
  EXPECT_EQ(p.request.method, "GET");
  EXPECT_EQ(p.request.path, "/api/v1/namespaces/a b/pods");
  EXPECT_EQ(p.request.raw_query, "labelSelector=app%3Ddemo&watch=true");
  ASSERT_NE(p.request.queryParam("labelSelector"), nullptr);
  EXPECT_EQ(*p.request.queryParam("labelSelector"), "app=demo");
  EXPECT_EQ(p.request.headers.get("accept"), "application/json");
  EXPECT_EQ(p.request.version_minor, 1);
  EXPECT_TRUE(p.request.body.empty());
}

TEST(RequestReader, ReadsContentLengthBody) {
  Parsed p = parse("POST /x HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world");
  ASSERT_TRUE(p.outcome.ok()) << p.outcome.message;
  EXPECT_EQ(p.request.body, "hello world");
}

TEST(RequestReader, ReadsChunkedBodyWithExtensionsAndTrailers) {
  Parsed p = parse(
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: y\r\n\r\n");
  ASSERT_TRUE(p.outcome.ok()) << p.outcome.message;
  EXPECT_EQ(p.request.body, "hello world");
}

TEST(RequestReader, KeepsPipelinedRequestForTheNextRead) {
  StringSource source("POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET /b HTTP/1.1\r\n\r\n",
                      100);
  RequestReader reader(source, {});
  Request first, second;
  ASSERT_TRUE(reader.readHead(&first, kNever).ok());
  ASSERT_TRUE(reader.readBody(&first).ok());
  ASSERT_TRUE(reader.readHead(&second, kNever).ok());
  EXPECT_EQ(first.body, "hi");
  EXPECT_EQ(second.path, "/b");
  Request third;
  EXPECT_EQ(reader.readHead(&third, kNever).kind, ReadOutcome::Kind::kClosed);
}

TEST(RequestReader, ReportsClosedOnEofBeforeOrInsideARequest) {
  EXPECT_EQ(parse("").outcome.kind, ReadOutcome::Kind::kClosed);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: x").outcome.kind, ReadOutcome::Kind::kClosed);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nab").outcome.kind,
            ReadOutcome::Kind::kClosed);
}

TEST(RequestReader, RejectsMalformedRequestsWith400) {
  for (const char* text : {"GARBAGE\r\n\r\n", "GET /\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n",
                           "GET relative HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
                           "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", "GET /%zz HTTP/1.1\r\n\r\n",
                           "GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
                           "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                           "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"}) {
    Parsed p = parse(text);
    EXPECT_EQ(p.outcome.kind, ReadOutcome::Kind::kReject) << text;
    EXPECT_EQ(p.outcome.status, 400) << text << ": " << p.outcome.message;
  }
}

TEST(RequestReader, RejectsBothFramingsUnknownCodingsAndOtherVersions) {
  Parsed both = parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n");
  EXPECT_EQ(both.outcome.status, 400);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").outcome.status, 501);
  EXPECT_EQ(parse("GET / HTTP/2.0\r\n\r\n").outcome.status, 505);
}

TEST(RequestReader, RejectsBodiesAndHeadsOverTheLimits) {
  RequestLimits limits;
  limits.max_body_bytes = 10;
  limits.max_head_bytes = 100;
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", limits).outcome.status, 413);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n",
                  limits)
                .outcome.status,
            413);
  EXPECT_EQ(
      parse("GET / HTTP/1.1\r\nA: " + std::string(200, 'x') + "\r\n\r\n", limits).outcome.status,
      431);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 20; ++i) many += "H" + std::to_string(i) + ": vvvvvv\r\n";
  EXPECT_EQ(parse(many + "\r\n", limits).outcome.status, 431);
  EXPECT_EQ(parse("GET /" + std::string(200, 'a') + " HTTP/1.1\r\n\r\n", limits).outcome.status,
            414);
}

TEST(WantsKeepAlive, FollowsVersionAndConnectionHeader) {
  Request request;
  EXPECT_TRUE(wantsKeepAlive(request));
  request.headers.add("Connection", "Keep-Alive, Close");
  EXPECT_FALSE(wantsKeepAlive(request));
  Request old;
  old.version_minor = 0;
  EXPECT_FALSE(wantsKeepAlive(old));
  old.headers.add("Connection", "keep-alive");
  EXPECT_TRUE(wantsKeepAlive(old));
}

}  // namespace
}  // namespace ringmaster::local
