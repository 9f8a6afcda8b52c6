// The shard plan: piece counts, exact coverage, at most one piece of a tensor per server, the
// minimum piece size, balance (the proven max - min bound, and 1.2x of the mean where it is
// achievable), determinism, and the checks on bad input.

#include "trainer/ps/shard_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace ringmaster::trainer::ps {
namespace {

constexpr int64_t kKiB = 1024;

// The project's 784-512-512-10 MLP: weights and bias per layer.
std::vector<TensorInfo> mlp() {
  return {{"fc1.weight", 784 * 512}, {"fc1.bias", 512},        {"fc2.weight", 512 * 512},
          {"fc2.bias", 512},         {"fc3.weight", 512 * 10}, {"fc3.bias", 10}};
}

// `count` tensors of `bytes` each.
std::vector<TensorInfo> same(int count, int64_t bytes) {
  std::vector<TensorInfo> tensors;
  for (int i = 0; i < count; ++i) tensors.push_back({"t" + std::to_string(i), bytes / 4});
  return tensors;
}

// BERT-base's shapes: embeddings, then 12 layers of attention and feed-forward.
std::vector<TensorInfo> bertBase() {
  std::vector<TensorInfo> tensors = {
      {"embed.word", 30522 * 768}, {"embed.position", 512 * 768}, {"embed.type", 2 * 768}};
  for (int l = 0; l < 12; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    for (const TensorInfo& t : std::vector<TensorInfo>{{"qkv.weight", 768 * 2304},
                                                       {"qkv.bias", 2304},
                                                       {"out.weight", 768 * 768},
                                                       {"out.bias", 768},
                                                       {"ln1", 2 * 768},
                                                       {"ff1.weight", 768 * 3072},
                                                       {"ff1.bias", 3072},
                                                       {"ff2.weight", 3072 * 768},
                                                       {"ff2.bias", 768},
                                                       {"ln2", 2 * 768}}) {
      tensors.push_back({p + t.name, t.elements});
    }
  }
  return tensors;
}

// Checks every promise of `plan` for `tensors` and returns its max / mean.
double checkPlan(const std::vector<TensorInfo>& tensors, int servers, int64_t min_piece_bytes,
                 const ShardPlan& plan) {
  EXPECT_EQ(plan.serverCount(), servers);
  EXPECT_EQ(plan.by_tensor.size(), tensors.size());
  if (plan.serverCount() != servers || plan.by_tensor.size() != tensors.size()) return 0;

  std::multiset<std::tuple<int, int64_t, int64_t, int>> from_tensors;
  for (int t = 0; t < static_cast<int>(tensors.size()); ++t) {
    const std::vector<Piece>& pieces = plan.piecesOf(t);
    SCOPED_TRACE(tensors[t].name);
    EXPECT_LE(static_cast<int>(pieces.size()),
              maxPieces(tensors[t].elements, servers, min_piece_bytes));
    if (tensors[t].elements * kBytesPerElement < 2 * min_piece_bytes) {
      EXPECT_EQ(pieces.size(), 1u) << "below two minimum pieces: never split";
    }
    // Contiguous, in order, covering [0, elements) exactly once, one piece per server at most.
    int64_t next = 0;
    std::set<int> holders;
    for (const Piece& p : pieces) {
      EXPECT_EQ(p.tensor, t);
      EXPECT_EQ(p.first, next);
      EXPECT_GT(p.elements, 0);
      next = p.first + p.elements;
      EXPECT_TRUE(holders.insert(p.server).second) << "two pieces on server " << p.server;
      EXPECT_GE(p.server, 0);
      EXPECT_LT(p.server, servers);
      if (pieces.size() > 1) {
        EXPECT_GE(p.bytes(), min_piece_bytes);
      }
      from_tensors.insert({p.tensor, p.first, p.elements, p.server});
    }
    EXPECT_EQ(next, tensors[t].elements);
  }
  // The per-server view lists the same pieces, each under its own server.
  std::multiset<std::tuple<int, int64_t, int64_t, int>> from_servers;
  for (int s = 0; s < servers; ++s) {
    for (const Piece& p : plan.by_server[s]) {
      EXPECT_EQ(p.server, s);
      from_servers.insert({p.tensor, p.first, p.elements, p.server});
    }
  }
  EXPECT_EQ(from_servers, from_tensors);

  // The guaranteed bound, from the even split's largest piece.
  int64_t even_piece = 0, total = 0;
  for (const TensorInfo& t : tensors) {
    const int64_t k = maxPieces(t.elements, servers, min_piece_bytes);
    even_piece = std::max(even_piece, (t.elements + k - 1) / k * kBytesPerElement);
    total += t.elements * kBytesPerElement;
  }
  const double bound = 1.0 + static_cast<double>((servers - 1) * even_piece) / total;
  EXPECT_LE(plan.imbalance(), bound + 1e-12) << "the guaranteed bound";
  return plan.imbalance();
}

struct PlanCase {
  std::string name;
  std::vector<TensorInfo> tensors;
  int servers;
  int64_t min_piece_bytes;
  std::vector<int> want_pieces;  // per tensor; empty: not checked
  double max_imbalance;          // most loaded server over the mean, at most
};
// Failures name the row, not its bytes.
void PrintTo(const PlanCase& c, std::ostream* os) { *os << c.name; }

std::string caseName(const ::testing::TestParamInfo<PlanCase>& info) { return info.param.name; }

class ShardPlanTable : public ::testing::TestWithParam<PlanCase> {};

TEST_P(ShardPlanTable, MeetsEveryPromise) {
  const PlanCase& c = GetParam();
  const ShardOptions options{c.min_piece_bytes};
  auto plan = planShards(c.tensors, c.servers, options);
  ASSERT_TRUE(plan.ok()) << plan.status().toString();
  const double imbalance = checkPlan(c.tensors, c.servers, c.min_piece_bytes, *plan);
  EXPECT_LE(imbalance, c.max_imbalance);
  std::vector<int> pieces;
  for (const auto& of_tensor : plan->by_tensor) pieces.push_back(of_tensor.size());
  if (!c.want_pieces.empty()) {
    EXPECT_EQ(pieces, c.want_pieces);
  }

  std::string report;
  for (int64_t b : plan->bytesPerServer()) report += " " + std::to_string(b);
  if (c.tensors.size() <= 16) {
    report += "; pieces per tensor:";
    for (int n : pieces) report += " " + std::to_string(n);
  }
  std::printf("[ %s ] max/mean %.4f, bytes per server:%s\n", c.name.c_str(), imbalance,
              report.c_str());

  // Same input, same plan (every worker and server computes it on its own).
  const std::vector<TensorInfo> copy = c.tensors;
  auto again = planShards(copy, c.servers, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *plan);
}

INSTANTIATE_TEST_SUITE_P(
    Plans, ShardPlanTable,
    ::testing::Values(
        // fc1.weight is 1.53 MiB and fc2.weight 1 MiB, the rest 24 KiB: only those two split.
        PlanCase{"mlp_1_server", mlp(), 1, 256 * kKiB, {1, 1, 1, 1, 1, 1}, 1.0},
        PlanCase{"mlp_2_servers", mlp(), 2, 256 * kKiB, {2, 1, 1, 1, 1, 1}, 1.2},
        PlanCase{"mlp_3_servers", mlp(), 3, 256 * kKiB, {3, 1, 3, 1, 1, 1}, 1.2},
        PlanCase{"mlp_4_servers", mlp(), 4, 256 * kKiB, {3, 1, 2, 1, 1, 1}, 1.2},
        // Cut into their most pieces, the two weights make 6 + 4 pieces of ~256 KiB for 8
        // servers (max / mean 1.58); filling to the mean cuts 5 + 3 instead.
        PlanCase{"mlp_8_servers", mlp(), 8, 256 * kKiB, {5, 1, 3, 1, 1, 1}, 1.05},
        PlanCase{"bert_base_5_servers", bertBase(), 5, 256 * kKiB, {}, 1.2},
        PlanCase{"bert_base_16_servers", bertBase(), 16, 256 * kKiB, {}, 1.2},
        // Below two minimum pieces a tensor stays whole, however many servers there are.
        PlanCase{"just_under_min_piece", {{"w", 256 * kKiB / 4 - 1}}, 4, 256 * kKiB, {1}, 4.0},
        PlanCase{"exactly_min_piece", {{"w", 256 * kKiB / 4}}, 4, 256 * kKiB, {1}, 4.0},
        PlanCase{"just_under_two_pieces", {{"w", 512 * kKiB / 4 - 1}}, 4, 256 * kKiB, {1}, 4.0},
        PlanCase{"two_pieces", {{"w", 512 * kKiB / 4}}, 4, 256 * kKiB, {2}, 2.0},
        // A big tensor gets at most one piece per server.
        PlanCase{"big_tensor_8_servers", {{"w", 10 * 1024 * kKiB / 4}}, 8, 256 * kKiB, {8}, 1.0},
        PlanCase{"tiny_min_piece", {{"w", 10}}, 3, 4, {3}, 1.2},
        // Largest-first greedy alone ends at 11:8:8 (max / mean 1.22); swaps reach 9:9:9.
        PlanCase{"greedy_counterexample",
                 {{"a", 50000},
                  {"b", 50000},
                  {"c", 40000},
                  {"d", 40000},
                  {"e", 30000},
                  {"f", 30000},
                  {"g", 30000}},
                 3,
                 256 * kKiB,
                 {1, 1, 1, 1, 1, 1, 1},
                 1.0},
        // Not achievable: three indivisible 300 KiB tensors on 2 servers; 2:1 is the best split.
        PlanCase{"indivisible_pieces", same(3, 300 * kKiB), 2, 256 * kKiB, {1, 1, 1}, 1.3334},
        // Indivisible sizes 1..12 (x 4000 bytes) on 4 servers: the best is 20:20:19:19 (1.026);
        // single moves and swaps stop at 21:20:19:18 (1.077), inside the bound.
        PlanCase{"many_small",
                 {{"a", 1000},
                  {"b", 2000},
                  {"c", 3000},
                  {"d", 4000},
                  {"e", 5000},
                  {"f", 6000},
                  {"g", 7000},
                  {"h", 8000},
                  {"i", 9000},
                  {"j", 10000},
                  {"k", 11000},
                  {"l", 12000}},
                 4,
                 256 * kKiB,
                 std::vector<int>(12, 1),
                 1.2}),
    caseName);

// Seeded random models (1 to 60 tensors of 1 to 4M elements, log-uniform) on 1 to 16 servers:
// every promise holds, the guaranteed bound included. Where each server's share is large next
// to the pieces that cannot be cut (the minimum piece, and whole tensors below two of it) the
// search reaches 1.2; this checks that on every such draw.
TEST(ShardPlan, RandomModelsKeepEveryPromise) {
  std::mt19937_64 rng(20240611);
  std::uniform_real_distribution<double> log_size(0.0, std::log(4.0e6));
  int within_reach = 0;
  double worst_within_reach = 0, worst = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<TensorInfo> tensors(1 + rng() % 60);
    for (size_t i = 0; i < tensors.size(); ++i) {
      tensors[i] = {"t" + std::to_string(i),
                    static_cast<int64_t>(std::max(1.0, std::exp(log_size(rng))))};
    }
    const int servers = 1 + static_cast<int>(rng() % 16);
    SCOPED_TRACE("round " + std::to_string(round));
    auto plan = planShards(tensors, servers);
    ASSERT_TRUE(plan.ok()) << plan.status().toString();
    const double imbalance = checkPlan(tensors, servers, kDefaultMinPieceBytes, *plan);
    worst = std::max(worst, imbalance);
    auto again = planShards(tensors, servers);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *plan);

    int64_t total = 0, uncuttable = kDefaultMinPieceBytes;
    for (const TensorInfo& t : tensors) {
      total += t.bytes();
      if (t.bytes() < 2 * kDefaultMinPieceBytes) uncuttable = std::max(uncuttable, t.bytes());
    }
    if (uncuttable * 5 * servers <= total) {
      ++within_reach;
      EXPECT_LE(imbalance, 1.2);
      worst_within_reach = std::max(worst_within_reach, imbalance);
    }
  }
  EXPECT_GT(within_reach, 50);  // the draw exercises the claim
  std::printf(
      "random models: worst max/mean %.4f; %d draws with small uncuttable pieces, "
      "worst %.4f\n",
      worst, within_reach, worst_within_reach);
}

struct BadCase {
  std::string name;
  std::vector<TensorInfo> tensors;
  int servers;
  int64_t min_piece_bytes;
  std::string want_message;
};
// Failures name the row, not its bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class ShardPlanRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(ShardPlanRejects, NamingTheField) {
  const BadCase& c = GetParam();
  auto plan = planShards(c.tensors, c.servers, ShardOptions{c.min_piece_bytes});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), core::Code::kInvalidArgument);
  EXPECT_NE(plan.status().message().find(c.want_message), std::string::npos)
      << plan.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Inputs, ShardPlanRejects,
    ::testing::Values(
        BadCase{"no_servers", mlp(), 0, 256 * kKiB, "servers: must be at least 1, got 0"},
        BadCase{"negative_servers", mlp(), -2, 256 * kKiB, "servers: must be at least 1, got -2"},
        BadCase{"zero_min_piece", mlp(), 2, 0, "min_piece_bytes: must be above 0, got 0"},
        BadCase{"no_tensors", {}, 2, 256 * kKiB, "tensors: no tensors to place"},
        BadCase{"empty_tensor",
                {{"a", 10}, {"b", 0}},
                2,
                256 * kKiB,
                "tensors[1] (b): elements must be above 0, got 0"},
        BadCase{"negative_tensor",
                {{"a", -5}},
                2,
                256 * kKiB,
                "tensors[0] (a): elements must be above 0, got -5"},
        BadCase{"no_name", {{"", 5}}, 2, 256 * kKiB, "tensors[0]: name is empty"},
        BadCase{"twice", {{"a", 5}, {"a", 6}}, 2, 256 * kKiB, "tensors[1] (a): name appears twice"},
        BadCase{"overflow",
                {{"a", INT64_MAX / 8}, {"b", INT64_MAX / 8 + 2}},
                2,
                256 * kKiB,
                "tensors[1] (b): total size overflows"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

}  // namespace
}  // namespace ringmaster::trainer::ps
