// The parameter servers' wire protocol: every message encodes and parses back to itself, frames
// are checked against their limits, malformed bodies are refused, and the handshake's proofs
// depend on everything they cover.

#include "trainer/ps/ps_wire.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <vector>

namespace ringmaster::trainer::ps::wire {
namespace {

const std::string kNonceA(kNonceBytes, 'a');
const std::string kNonceB(kNonceBytes, 'b');
const std::string kProof(kProofBytes, 'p');

std::string bodyOf(const std::string& frame) { return frame.substr(kFrameHeaderBytes); }

struct RoundTripCase {
  std::string name;
  Message message;
  size_t body_bytes;
};
void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << c.name; }

class RoundTrip : public ::testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, ParsesBackToItself) {
  const RoundTripCase& c = GetParam();
  const std::string frame = encode(c.message);
  uint32_t len = 0;
  ASSERT_EQ(peekFrame(frame, 1 << 20, &len), FrameStatus::kReady);
  EXPECT_EQ(len, c.body_bytes);
  EXPECT_EQ(frame.size(), kFrameHeaderBytes + c.body_bytes);
  core::Result<Message> parsed = parse(bodyOf(frame));
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  EXPECT_TRUE(*parsed == c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Messages, RoundTrip,
    ::testing::Values(
        RoundTripCase{"challenge", Challenge{kNonceA}, 1 + 32},
        RoundTripCase{"hello", Hello{kVersion, 7, kNonceA, kProof}, 1 + 4 + 4 + 32 + 32},
        RoundTripCase{"hello_negative_worker", Hello{kVersion, -1, kNonceB, kProof}, 73},
        RoundTripCase{"welcome", Welcome{kProof, true, 0}, 1 + 32 + 1 + 8},
        RoundTripCase{"welcome_rejoin_at", Welcome{kProof, false, 1234}, 42},
        RoundTripCase{"pull", Pull{42}, 1 + 8 + 1},
        RoundTripCase{"pull_as_stored", Pull{42, true}, 1 + 8 + 1},
        RoundTripCase{"pull_max_step", Pull{std::numeric_limits<int64_t>::max()}, 10},
        RoundTripCase{"push", Push{3, {1.5f, -2.0f, 0.0f}}, 1 + 8 + 12},
        RoundTripCase{"push_empty", Push{0, {}}, 9},
        RoundTripCase{"values", Values{{0.25f, std::numeric_limits<float>::infinity()}}, 1 + 8},
        RoundTripCase{"values_empty", Values{}, 1}, RoundTripCase{"ack", Ack{}, 1},
        RoundTripCase{"leave", Leave{}, 1}, RoundTripCase{"join", Join{77}, 1 + 8},
        RoundTripCase{"pushed", Pushed{938}, 1 + 8},
        RoundTripCase{"error", Error{ErrorCode::kNotFound, "worker 3 is not live"}, 1 + 1 + 20},
        RoundTripCase{"error_unauthenticated", Error{ErrorCode::kUnauthenticated, ""}, 2}),
    [](const auto& info) { return info.param.name; });

TEST(Wire, FloatsTravelAsRawLittleEndianFloat32) {
  const std::string frame = encodePush(1, std::vector<float>{1.0f});
  // header (9) | type | step 1 (LE) | 1.0f = 0x3f800000 (LE)
  const std::string expected("\x0d\x00\x00\x00\x03\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x3f",
                             17);
  EXPECT_EQ(frame, expected);
}

TEST(Wire, ValuesGoStraightIntoTheCallersBuffer) {
  const std::vector<float> sent{1, 2, 3};
  const std::string body = bodyOf(encodeValues(sent));
  std::vector<float> got(3);
  ASSERT_TRUE(parseValuesInto(body, got).ok());
  EXPECT_EQ(got, sent);
  std::vector<float> wrong_size(4);
  EXPECT_EQ(parseValuesInto(body, wrong_size).code(), core::Code::kInvalidArgument);
  EXPECT_EQ(parseValuesInto(bodyOf(encode(Ack{})), got).code(), core::Code::kInvalidArgument);
}

struct FrameCase {
  std::string name;
  std::string buf;
  size_t max_body;
  FrameStatus want;
};
void PrintTo(const FrameCase& c, std::ostream* os) { *os << c.name; }

class Frames : public ::testing::TestWithParam<FrameCase> {};

std::string header(uint32_t len) {
  std::string h(4, '\0');
  std::memcpy(h.data(), &len, 4);
  return h;
}

TEST_P(Frames, AreCheckedAgainstTheLimit) {
  const FrameCase& c = GetParam();
  uint32_t len = 0;
  EXPECT_EQ(peekFrame(c.buf, c.max_body, &len), c.want);
}

INSTANTIATE_TEST_SUITE_P(
    Limits, Frames,
    ::testing::Values(
        FrameCase{"empty_buffer", "", 16, FrameStatus::kNeedMore},
        FrameCase{"partial_header", std::string("\x01\x00", 2), 16, FrameStatus::kNeedMore},
        FrameCase{"truncated_body", header(5) + "ab", 16, FrameStatus::kNeedMore},
        FrameCase{"whole", header(2) + "ab", 16, FrameStatus::kReady},
        FrameCase{"whole_with_next", header(1) + "ab", 16, FrameStatus::kReady},
        FrameCase{"at_the_limit", header(4) + "abcd", 4, FrameStatus::kReady},
        FrameCase{"over_the_limit", header(5) + "abcde", 4, FrameStatus::kBad},
        FrameCase{"oversized_header_only", header(0xffffffffu), 1 << 20, FrameStatus::kBad},
        FrameCase{"zero_length", header(0), 16, FrameStatus::kBad}),
    [](const auto& info) { return info.param.name; });

struct BadBodyCase {
  std::string name;
  std::string body;
};
void PrintTo(const BadBodyCase& c, std::ostream* os) { *os << c.name; }

class BadBodies : public ::testing::TestWithParam<BadBodyCase> {};

TEST_P(BadBodies, AreRefused) {
  core::Result<Message> parsed = parse(GetParam().body);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), core::Code::kInvalidArgument);
}

std::string chop(const std::string& body, size_t bytes) {
  return body.substr(0, body.size() - bytes);
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, BadBodies,
    ::testing::Values(
        BadBodyCase{"empty", ""}, BadBodyCase{"unknown_type", "\x7f"},
        BadBodyCase{"challenge_short_nonce", chop(bodyOf(encode(Challenge{kNonceA})), 1)},
        BadBodyCase{"challenge_trailing", bodyOf(encode(Challenge{kNonceA})) + "x"},
        BadBodyCase{"hello_truncated",
                    chop(bodyOf(encode(Hello{kVersion, 1, kNonceA, kProof})), 1)},
        BadBodyCase{"hello_trailing", bodyOf(encode(Hello{kVersion, 1, kNonceA, kProof})) + "x"},
        BadBodyCase{"welcome_short", chop(bodyOf(encode(Welcome{kProof})), 1)},
        BadBodyCase{"welcome_live_not_a_bool",
                    [] {
                      std::string body = bodyOf(encode(Welcome{kProof, true, 5}));
                      body[1 + 32] = 2;
                      return body;
                    }()},
        BadBodyCase{"join_truncated", chop(bodyOf(encode(Join{1})), 1)},
        BadBodyCase{"pushed_truncated", chop(bodyOf(encode(Pushed{1})), 1)},
        BadBodyCase{"pushed_negative", std::string("\x86\xff\xff\xff\xff\xff\xff\xff\xff", 9)},
        BadBodyCase{"join_trailing", bodyOf(encode(Join{1})) + "x"},
        BadBodyCase{"pull_truncated", chop(bodyOf(encode(Pull{1})), 1)},
        BadBodyCase{"pull_trailing", bodyOf(encode(Pull{1})) + "x"},
        // The view is 0 (for a step) or 1 (as stored).
        BadBodyCase{"pull_unknown_view", chop(bodyOf(encode(Pull{1})), 1) + std::string(1, '\x02')},
        BadBodyCase{"push_no_step", "\x03\x01\x00"},
        BadBodyCase{"push_partial_float", chop(bodyOf(encodePush(1, std::vector<float>{1, 2})), 1)},
        BadBodyCase{"values_partial_float", chop(bodyOf(encodeValues(std::vector<float>{1})), 2)},
        BadBodyCase{"ack_trailing", bodyOf(encode(Ack{})) + "x"},
        BadBodyCase{"leave_trailing", bodyOf(encode(Leave{})) + "x"},
        BadBodyCase{"error_no_code", "\x85"}),
    [](const auto& info) { return info.param.name; });

TEST(Wire, ErrorCodesMapBothWays) {
  for (core::Code code :
       {core::Code::kInvalidArgument, core::Code::kNotFound, core::Code::kAlreadyExists,
        core::Code::kTimeout, core::Code::kUnavailable, core::Code::kCancelled,
        core::Code::kInternal}) {
    EXPECT_EQ(fromWire({toWire(code), "m"}).code(), code) << core::codeName(code);
  }
  const core::Status refused = fromWire({ErrorCode::kUnauthenticated, "wrong proof"});
  EXPECT_EQ(refused.code(), core::Code::kInvalidArgument);
  EXPECT_EQ(refused.message(), "unauthenticated: wrong proof");
  EXPECT_EQ(errorCodeName(ErrorCode::kUnauthenticated), "UNAUTHENTICATED");
}

TEST(Wire, ProofsCoverSecretRoleNoncesAndWorker) {
  const std::string p = proof("secret", Role::kClient, kNonceA, kNonceB, 1);
  ASSERT_EQ(p.size(), kProofBytes);
  EXPECT_TRUE(sameProof(p, proof("secret", Role::kClient, kNonceA, kNonceB, 1)));
  EXPECT_FALSE(sameProof(p, proof("secreT", Role::kClient, kNonceA, kNonceB, 1)));
  EXPECT_FALSE(sameProof(p, proof("secret", Role::kServer, kNonceA, kNonceB, 1)));
  EXPECT_FALSE(sameProof(p, proof("secret", Role::kClient, kNonceB, kNonceA, 1)));
  EXPECT_FALSE(sameProof(p, proof("secret", Role::kClient, kNonceA, kNonceB, 2)));
  EXPECT_FALSE(sameProof(p, p.substr(1)));
  EXPECT_EQ(proof("", Role::kClient, kNonceA, kNonceB, 1).size(), kProofBytes);
  core::Result<std::string> n1 = randomNonce(), n2 = randomNonce();
  ASSERT_TRUE(n1.ok() && n2.ok());
  EXPECT_EQ(n1->size(), kNonceBytes);
  EXPECT_NE(*n1, *n2);
}

}  // namespace
}  // namespace ringmaster::trainer::ps::wire
