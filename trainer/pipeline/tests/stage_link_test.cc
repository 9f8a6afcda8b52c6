// The device link's one decision: which NCCL group each held send travels in. A table of the
// executor's calls against the sendRecvAsync calls they must make; a host communicator gets the
// host link, whose messages go straight to its point-to-point.

#include "trainer/pipeline/stage_link.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/comm/inproc_communicator.h"

namespace ringmaster::trainer::pipeline {
namespace {

// One sendRecvAsync call: "send 4 to 1 + recv 8 from 2", "send 4 to 1", "recv 8 from 2".
class RecordingDevice final : public comm::Communicator, public comm::DeviceCollectives {
 public:
  std::vector<std::string> calls;

  int rank() const override { return 0; }
  int size() const override { return 4; }
  std::string backend() const override { return "recording"; }
  std::string allreduceAlgorithm(size_t) const override { return "none"; }
  core::Status allreduceSum(float*, size_t, const comm::AllreduceOptions&) override { return {}; }
  core::Status broadcast(void*, size_t, int) override { return {}; }
  core::Status barrier() override { return {}; }
  comm::DeviceCollectives* deviceCollectives() override { return this; }
  core::Status allreduceAverageAsync(float*, size_t, void*) override { return {}; }
  core::Status watch(void*, const std::string&) override { return {}; }
  core::Status asyncError() const override { return {}; }
  core::Status sendRecvAsync(const void*, size_t send_bytes, int send_to, void*, size_t recv_bytes,
                             int recv_from, void* stream) override {
    EXPECT_EQ(stream, &stream_token);
    std::string call;
    if (send_to >= 0)
      call = "send " + std::to_string(send_bytes) + " to " + std::to_string(send_to);
    if (recv_from >= 0) {
      call += std::string(call.empty() ? "" : " + ") + "recv " + std::to_string(recv_bytes) +
              " from " + std::to_string(recv_from);
    }
    calls.push_back(call);
    return answer;
  }
  int stream_token = 0;
  core::Status answer;  // what every call returns
};

// An executor's call on the link: "send <bytes> <peer>", "recv <bytes> <peer>", "flush", or
// "wait <n>" (the n-th send started, counting from 0).
struct Row {
  const char* name;
  std::vector<std::string> ops;
  std::vector<std::string> want;
};

TEST(DeviceGroupLink, EnqueuesEachHeldSendWithTheNextReceiveOrAlone) {
  const std::vector<Row> rows = {
      {"a send joins the next receive",  // 1F1B's steady state
       {"send 4 1", "recv 8 1"},
       {"send 4 to 1 + recv 8 from 1"}},
      {"a receive with nothing held goes alone", {"recv 8 2"}, {"recv 8 from 2"}},
      {"a flush before a pass that receives nothing sends alone",
       {"send 4 1", "flush", "recv 8 2"},
       {"send 4 to 1", "recv 8 from 2"}},
      {"a second send first sends the held one",
       {"send 4 1", "send 6 2", "recv 8 2"},
       {"send 4 to 1", "send 6 to 2 + recv 8 from 2"}},
      {"waiting for a held send enqueues it",
       {"send 4 1", "wait 0", "recv 8 1"},
       {"send 4 to 1", "recv 8 from 1"}},
      {"waiting for a send already enqueued enqueues nothing",
       {"send 4 1", "recv 8 1", "wait 0", "flush"},
       {"send 4 to 1 + recv 8 from 1"}},
      {"a flush with nothing held enqueues nothing", {"flush", "flush"}, {}},
  };
  for (const Row& row : rows) {
    RecordingDevice device;
    auto link = makeStageLink(device, &device.stream_token);
    std::vector<std::unique_ptr<comm::PendingSend>> sends;
    char buffer[8];
    for (const std::string& op : row.ops) {
      const std::string verb = op.substr(0, op.find(' '));
      if (verb == "flush") {
        ASSERT_TRUE(link->flush().ok());
      } else if (verb == "wait") {
        ASSERT_TRUE(sends.at(std::stoul(op.substr(5)))->wait().ok());
      } else {
        const size_t space = op.find(' ', 5);
        const size_t bytes = std::stoul(op.substr(5, space - 5));
        const int peer = std::stoi(op.substr(space + 1));
        if (verb == "send") {
          auto started = link->startSend(buffer, bytes, peer, {});
          ASSERT_TRUE(started.ok());
          sends.push_back(std::move(*started));
        } else {
          ASSERT_TRUE(link->recv(buffer, bytes, peer, {}).ok());
        }
      }
    }
    EXPECT_EQ(device.calls, row.want) << row.name;
  }
}

TEST(DeviceGroupLink, AFailedGroupNamesBothMessages) {
  RecordingDevice refusing;
  refusing.answer = core::unavailable("peer gone");
  auto link = makeStageLink(refusing, &refusing.stream_token);
  comm::PointToPointOptions send_opts, recv_opts;
  send_opts.tag = "activations of micro-batch 3, step 7";
  recv_opts.tag = "gradients of micro-batch 1, step 7";
  char buffer[4];
  ASSERT_TRUE(link->startSend(buffer, 4, 1, send_opts).ok());
  const core::Status s = link->recv(buffer, 4, 1, recv_opts);
  EXPECT_EQ(s.code(), core::Code::kUnavailable);
  EXPECT_EQ(s.message(),
            "activations of micro-batch 3, step 7 with gradients of micro-batch 1, step 7: peer "
            "gone");
}

TEST(HostLink, PassesMessagesToTheCommunicatorsPointToPoint) {
  auto comms = comm::makeInProcCommunicators(2);
  auto sender = makeStageLink(*comms[0], nullptr);
  auto receiver = makeStageLink(*comms[1], nullptr);
  const float out[2] = {1.5f, -2.0f};
  float in[2] = {0, 0};
  ASSERT_TRUE(sender->send(out, sizeof out, 1, {}).ok());
  ASSERT_TRUE(receiver->flush().ok());
  ASSERT_TRUE(receiver->recv(in, sizeof in, 0, {}).ok());
  EXPECT_EQ(in[0], 1.5f);
  EXPECT_EQ(in[1], -2.0f);
}

}  // namespace
}  // namespace ringmaster::trainer::pipeline
