#include "local/https/response_writer.h"

#include <gtest/gtest.h>

namespace ringmaster::local {
namespace {

class StringSink : public ByteSink {
 public:
  core::Status writeAll(std::string_view data) override {
    if (fail) return core::unavailable("broken pipe");
    writes.emplace_back(data);
    return core::Status::Ok();
  }
  std::string all() const {
    std::string out;
    for (const auto& w : writes) out += w;
    return out;
  }
  std::vector<std::string> writes;
  bool fail = false;
};

Request get(std::string method = "GET") {
  Request request;
  request.method = std::move(method);
  request.path = "/x";
  return request;
}

TEST(ResponseWriter, SendsStatusHeadersLengthAndBodyInOneWrite) {
  StringSink sink;
  Request request = get();
  ResponseWriter writer(sink, request, true, std::stop_source());
  Headers headers;
  headers.add("Content-Type", "application/json");
  headers.add("Content-Length", "999");  // replaced
  ASSERT_TRUE(writer.send(201, headers, "{}").ok());
  ASSERT_EQ(sink.writes.size(), 1u);
  const std::string& out = sink.writes[0];
  EXPECT_TRUE(out.starts_with("HTTP/1.1 201 Created\r\n")) << out;
  EXPECT_NE(out.find("Content-Type: application/json\r\n"), std::string::npos);
  EXPECT_NE(out.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_EQ(out.find("999"), std::string::npos);
  EXPECT_EQ(out.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(out.ends_with("\r\n\r\n{}"));
  EXPECT_TRUE(writer.keepAlive());
  EXPECT_EQ(writer.bodyBytes(), 2u);
  EXPECT_FALSE(writer.send(200, "text/plain", "again").ok());
}

TEST(ResponseWriter, SaysConnectionCloseWhenNotKeepingAlive) {
  StringSink sink;
  Request request = get();
  ResponseWriter writer(sink, request, false, std::stop_source());
  ASSERT_TRUE(writer.send(400, "text/plain", "bad\n").ok());
  EXPECT_NE(sink.all().find("Connection: close\r\n"), std::string::npos);
  EXPECT_FALSE(writer.keepAlive());
}

TEST(ResponseWriter, HeadGetsLengthButNoBody) {
  StringSink sink;
  Request request = get("HEAD");
  ResponseWriter writer(sink, request, true, std::stop_source());
  ASSERT_TRUE(writer.send(200, "text/plain", "hello").ok());
  EXPECT_NE(sink.all().find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_TRUE(sink.all().ends_with("\r\n\r\n"));
}

TEST(ResponseWriter, StreamsEachChunkAsItsOwnFlushedWrite) {
  StringSink sink;
  Request request = get();
  int started = 0;
  ResponseWriter writer(sink, request, true, std::stop_source(), [&] { ++started; });
  ASSERT_TRUE(writer.startStream(200, {}).ok());
  EXPECT_EQ(started, 1);
  ASSERT_TRUE(writer.writeChunk("{\"type\":\"ADDED\"}\n").ok());
  ASSERT_TRUE(writer.writeChunk("").ok());  // skipped: it would end the stream
  ASSERT_TRUE(writer.writeChunk(std::string(300, 'x')).ok());
  ASSERT_TRUE(writer.endStream().ok());
  ASSERT_EQ(sink.writes.size(), 4u);
  EXPECT_NE(sink.writes[0].find("Transfer-Encoding: chunked\r\n"), std::string::npos);
  EXPECT_EQ(sink.writes[1], "11\r\n{\"type\":\"ADDED\"}\n\r\n");
  EXPECT_TRUE(sink.writes[2].starts_with("12c\r\nxxx"));
  EXPECT_EQ(sink.writes[3], "0\r\n\r\n");
  EXPECT_TRUE(writer.keepAlive());
}

TEST(ResponseWriter, WriteFailureClosesTheStreamForEveryone) {
  StringSink sink;
  Request request = get();
  std::stop_source closer;
  ResponseWriter writer(sink, request, true, closer);
  ASSERT_TRUE(writer.startStream(200, {}).ok());
  sink.fail = true;
  EXPECT_FALSE(writer.writeChunk("event").ok());
  EXPECT_TRUE(writer.closed());
  EXPECT_TRUE(closer.stop_requested());
  EXPECT_FALSE(writer.keepAlive());
  sink.fail = false;
  EXPECT_FALSE(writer.writeChunk("later").ok());
}

TEST(ResponseWriter, ChunkOutsideAStreamIsAnError) {
  StringSink sink;
  Request request = get();
  ResponseWriter writer(sink, request, true, std::stop_source());
  EXPECT_FALSE(writer.writeChunk("x").ok());
  EXPECT_FALSE(writer.endStream().ok());
  EXPECT_TRUE(sink.writes.empty());
}

}  // namespace
}  // namespace ringmaster::local
