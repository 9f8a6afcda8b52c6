// Decode errors name the full field path of what was wrong, and unknown fields never fail.

#include <gtest/gtest.h>

#include "ringmaster/kube/lease.h"
#include "ringmaster/kube/list.h"
#include "ringmaster/kube/pod.h"
#include "ringmaster/kube/raw_object.h"
#include "ringmaster/kube/secret.h"
#include "ringmaster/kube/service.h"
#include "ringmaster/kube/training_job.h"
#include "ringmaster/kube/watch_event.h"

namespace ringmaster::kube {
namespace {

using nlohmann::json;

template <class T>
std::string errorOf(std::string_view text) {
  core::Result<T> r = decodeText<T>(text);
  EXPECT_FALSE(r.ok()) << "decoded without error: " << text;
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), core::Code::kInvalidArgument);
  return r.status().message();
}

TEST(DecodeErrors, BadQuantityNamesTheContainerAndResource) {
  EXPECT_EQ(errorOf<Pod>(R"({"spec":{"containers":[{"name":"a","resources":{"limits":
                {"cpu":"abc"}}}]}})"),
            "spec.containers[0].resources.limits.cpu: expected a quantity, got \"abc\" "
            "(no digits)");
}

TEST(DecodeErrors, StringWhereAnIntegerBelongs) {
  EXPECT_EQ(errorOf<TrainingJob>(R"({"spec":{"replicas":"many"}})"),
            "spec.replicas: expected integer, got string");
}

TEST(DecodeErrors, FractionalNumberWhereAnIntegerBelongs) {
  EXPECT_EQ(errorOf<TrainingJob>(R"({"spec":{"replicas":1.5}})"),
            "spec.replicas: expected integer, got number 1.5");
  core::Result<TrainingJob> integral = decodeText<TrainingJob>(R"({"spec":{"replicas":2.0}})");
  ASSERT_TRUE(integral.ok());
  EXPECT_EQ(integral->spec.replicas, 2);
}

TEST(DecodeErrors, Int32OutOfRange) {
  EXPECT_EQ(errorOf<TrainingJob>(R"({"spec":{"replicas":4294967296}})"),
            "spec.replicas: integer 4294967296 out of range for int32");
}

TEST(DecodeErrors, MapKeyWithDotsIsBracketed) {
  EXPECT_EQ(errorOf<Pod>(R"({"metadata":{"labels":{"ringmaster.dev/job-name":3}}})"),
            "metadata.labels[ringmaster.dev/job-name]: expected string, got number");
}

TEST(DecodeErrors, NestedOptionalStructs) {
  EXPECT_EQ(errorOf<TrainingJob>(R"({"spec":{"trainer":{"optimizer":{"learningRate":"fast"}}}})"),
            "spec.trainer.optimizer.learningRate: expected number, got string");
  EXPECT_EQ(errorOf<TrainingJob>(R"({"spec":{"trainer":{"model":{"hidden":[512,"x"]}}}})"),
            "spec.trainer.model.hidden[1]: expected integer, got string");
  EXPECT_EQ(errorOf<TrainingJob>(R"({"spec":{"suspend":"yes"}})"),
            "spec.suspend: expected boolean, got string");
  EXPECT_EQ(errorOf<Pod>(R"({"spec":{"containers":{"name":"a"}}})"),
            "spec.containers: expected array, got object");
  EXPECT_EQ(
      errorOf<Pod>(R"({"status":{"conditions":[{"type":"Ready","lastTransitionTime":"soon"}]}})"),
      "status.conditions[0].lastTransitionTime: expected an RFC 3339 time "
      "(2026-11-22T10:00:00Z), got \"soon\"");
}

TEST(DecodeErrors, ListItemsCarryTheirIndex) {
  EXPECT_EQ(errorOf<List<TrainingJob>>(
                R"({"items":[{"spec":{"replicas":1}},{"spec":{"replicas":"two"}}]})"),
            "items[1].spec.replicas: expected integer, got string");
}

TEST(DecodeErrors, WatchEventPaths) {
  EXPECT_EQ(
      errorOf<WatchEvent<TrainingJob>>(R"({"type":"ADDED","object":{"spec":{"replicas":[]}}})"),
      "object.spec.replicas: expected integer, got array");
  EXPECT_EQ(errorOf<WatchEvent<TrainingJob>>(R"({"type":"CHANGED","object":{}})"),
            "type: unknown watch event type \"CHANGED\"");
  EXPECT_EQ(errorOf<WatchEvent<TrainingJob>>(R"({"type":"ADDED"})"), "object: missing");
}

// The watch's own decoder (the object moved, not copied) says what the generic one says, on
// good lines and bad.
TEST(DecodeErrors, RawWatchEventsDecodeAsTheGenericCodecDecodesThem) {
  const std::vector<std::string> lines = {
      R"({"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",)"
      R"("namespace":"ns","resourceVersion":"7","labels":{"a":"b"}},"spec":{"nodeName":"n"}}})",
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"9"}}})",
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})",
      R"({"type":"DELETED","object":{"kind":"Pod"}})",
      R"({"type":"DELETED","object":[1]})",
      R"({"type":"FOO","object":{}})",
      R"({"object":{}})",
      R"({"type":"ADDED","object":{"metadata":{"name":5}}})",
      R"({"type":"ADDED")",
      R"([])",
  };
  for (const std::string& line : lines) {
    core::Result<WatchEvent<RawObject>> got = decodeRawWatchEvent(line);
    core::Result<WatchEvent<RawObject>> want = decodeText<WatchEvent<RawObject>>(line);
    ASSERT_EQ(got.ok(), want.ok()) << line;
    if (!want.ok()) {
      EXPECT_EQ(got.status().code(), want.status().code()) << line;
      EXPECT_EQ(got.status().message(), want.status().message()) << line;
      continue;
    }
    EXPECT_EQ(*got, *want) << line;
  }
}

TEST(DecodeErrors, MicroTimeNeedsSixFractionalDigits) {
  // The API server answers 400 to the same text.
  EXPECT_EQ(errorOf<Lease>(R"({"spec":{"renewTime":"2026-11-22T02:01:03.123Z"}})"),
            "spec.renewTime: expected an RFC 3339 time with 6 fractional digits "
            "(2026-11-22T02:01:03.874063Z), got \"2026-11-22T02:01:03.123Z\"");
}

TEST(DecodeErrors, SecretDataMustBeBase64) {
  EXPECT_EQ(errorOf<Secret>(R"({"data":{"token":"!!!!"}})"),
            "data.token: expected base64, got \"!!!!\"");
}

TEST(DecodeErrors, IntOrStringRejectsOtherTypes) {
  EXPECT_EQ(errorOf<Service>(R"({"spec":{"ports":[{"port":80,"targetPort":true}]}})"),
            "spec.ports[0].targetPort: expected integer or string, got boolean");
}

TEST(DecodeErrors, DocumentThatIsNotAnObject) {
  EXPECT_EQ(errorOf<Pod>("[1,2]"), "expected object, got array");
  EXPECT_EQ(errorOf<Pod>(R"({"metadata":"x"})"), "metadata: expected object, got string");
}

TEST(DecodeErrors, MalformedJsonText) {
  std::string message = errorOf<Pod>(R"({"metadata":)");
  EXPECT_EQ(message.rfind("invalid JSON: ", 0), 0u) << message;
}

TEST(DecodeErrors, UnknownFieldsAreKeptNotRejected) {
  core::Result<TrainingJob> job =
      decodeText<TrainingJob>(R"({"spec":{"replicas":2,"gpus":4},"futureField":{"a":1}})");
  ASSERT_TRUE(job.ok()) << job.status().toString();
  EXPECT_EQ(job->spec.replicas, 2);
  EXPECT_EQ(job->spec.extra, json::parse(R"({"gpus":4})"));
  EXPECT_EQ(job->extra, json::parse(R"({"futureField":{"a":1}})"));
}

TEST(DecodeErrors, NullMeansAbsent) {
  core::Result<Pod> pod = decodeText<Pod>(
      R"({"metadata":{"name":"a","finalizers":null,"labels":null},"spec":{"nodeName":null}})");
  ASSERT_TRUE(pod.ok()) << pod.status().toString();
  EXPECT_TRUE(pod->metadata.finalizers.empty());
  EXPECT_EQ(pod->spec.node_name, "");
}

}  // namespace
}  // namespace ringmaster::kube
