// ShmChannel on ordinary memory, one thread: how much each write and read takes as the ring
// fills, empties and wraps, and that bytes come out as they went in.

#include "trainer/comm/shm_channel.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace ringmaster::trainer::comm {
namespace {

struct Op {
  bool write;       // else read
  size_t bytes;     // asked for
  size_t expected;  // taken
  size_t readable;  // after the op
};

TEST(ShmChannel, WritesAndReadsTakeWhatFitsAcrossTheEnd) {
  ShmChannelCounters counters;
  std::vector<char> ring(16);
  ShmChannel channel(&counters, ring.data(), ring.size());
  std::vector<char> source(64);
  std::iota(source.begin(), source.end(), 0);
  size_t in = 0, out = 0;  // bytes of `source` written and read so far
  const std::vector<Op> ops = {
      {true, 10, 10, 10},  // [0, 10)
      {true, 10, 6, 16},   // full after 6
      {true, 1, 0, 16},    // nothing fits
      {false, 4, 4, 12},   // frees the ring's start
      {true, 8, 4, 16},    // wraps: 4 more
      {false, 20, 16, 0},  // everything, across the end
      {false, 1, 0, 0},    // nothing to read
      {true, 13, 13, 13},  // from position 4, wrapping again
      {false, 13, 13, 0},
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.write) {
      EXPECT_EQ(channel.write(source.data() + in, op.bytes), op.expected) << "op " << i;
      in += op.expected;
    } else {
      std::vector<char> got(op.bytes);
      const size_t n = channel.read(got.data(), op.bytes);
      ASSERT_EQ(n, op.expected) << "op " << i;
      EXPECT_EQ(std::vector<char>(got.begin(), got.begin() + n),
                std::vector<char>(source.begin() + out, source.begin() + out + n))
          << "op " << i;
      out += n;
    }
    EXPECT_EQ(channel.readable(), op.readable) << "op " << i;
  }
}

TEST(ShmChannel, NullBuffersWriteZerosAndSkipBytes) {
  ShmChannelCounters counters;
  std::vector<char> ring(8, 'x');
  ShmChannel channel(&counters, ring.data(), ring.size());
  EXPECT_EQ(channel.write(nullptr, 3), 3u);
  const char data[] = {'a', 'b'};
  EXPECT_EQ(channel.write(data, 2), 2u);
  EXPECT_EQ(channel.read(nullptr, 3), 3u);  // skips the zeros
  char got[2] = {};
  EXPECT_EQ(channel.read(got, 2), 2u);
  EXPECT_EQ(got[0], 'a');
  EXPECT_EQ(got[1], 'b');
  EXPECT_EQ(ring[0], 0);
  EXPECT_EQ(ring[2], 0);
}

}  // namespace
}  // namespace ringmaster::trainer::comm
