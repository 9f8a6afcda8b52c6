#include "trainer/ps/shard_plan.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace ringmaster::trainer::ps {
namespace {

// Total bytes must fit an int64.
constexpr int64_t kMaxTotalElements = std::numeric_limits<int64_t>::max() / kBytesPerElement;

int64_t minPieceElements(int64_t min_piece_bytes) {
  return (min_piece_bytes + kBytesPerElement - 1) / kBytesPerElement;
}

core::Status validate(std::span<const TensorInfo> tensors, int servers,
                      const ShardOptions& options) {
  if (servers < 1) {
    return core::invalidArgument("servers: must be at least 1, got " + std::to_string(servers));
  }
  if (options.min_piece_bytes < 1) {
    return core::invalidArgument("min_piece_bytes: must be above 0, got " +
                                 std::to_string(options.min_piece_bytes));
  }
  if (tensors.empty()) return core::invalidArgument("tensors: no tensors to place");
  if (tensors.size() > static_cast<size_t>(INT_MAX)) {
    return core::invalidArgument("tensors: " + std::to_string(tensors.size()) + " is too many");
  }
  int64_t total = 0;
  std::set<std::string_view> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    const std::string field = "tensors[" + std::to_string(i) + "]";
    if (t.name.empty()) return core::invalidArgument(field + ": name is empty");
    if (!names.insert(t.name).second) {
      return core::invalidArgument(field + " (" + t.name + "): name appears twice");
    }
    if (t.elements < 1) {
      return core::invalidArgument(field + " (" + t.name + "): elements must be above 0, got " +
                                   std::to_string(t.elements));
    }
    if (t.elements > kMaxTotalElements - total) {
      return core::invalidArgument(field + " (" + t.name + "): total size overflows");
    }
    total += t.elements;
  }
  return core::Status::Ok();
}

// Sums of squared loads, exact: a server's load may pass 2^32 elements.
using Wide = __int128;

// A candidate placement; loads in elements.
struct Placement {
  std::vector<Piece> pieces;
  std::vector<int64_t> load;

  int64_t maxLoad() const { return *std::max_element(load.begin(), load.end()); }
  Wide sumOfSquares() const {
    Wide sum = 0;
    for (int64_t l : load) sum += Wide{l} * l;
    return sum;
  }
};

// Tensors by size, largest first (ties: lower index), so small pieces fill the gaps.
std::vector<int> bySizeDescending(std::span<const TensorInfo> tensors) {
  std::vector<int> order(tensors.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int l, int r) { return tensors[l].elements > tensors[r].elements; });
  return order;
}

// Every tensor cut into its most pieces, equal to within one element; a tensor's pieces go to its k
// least-loaded servers, the larger pieces to the less loaded. Placing each tensor this way keeps
// max - min load within the largest piece (the bound the header promises).
Placement evenSplit(std::span<const TensorInfo> tensors, int servers, int64_t min_piece_bytes) {
  Placement out{{}, std::vector<int64_t>(servers, 0)};
  std::vector<int> order = bySizeDescending(tensors);
  // Largest piece first: a tensor's piece size decides how much it can unbalance.
  auto largest = [&](int t) {
    const int64_t k = maxPieces(tensors[t].elements, servers, min_piece_bytes);
    return (tensors[t].elements + k - 1) / k;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int l, int r) { return largest(l) > largest(r); });
  std::vector<int> by_load(servers);
  for (int t : order) {
    const int k = maxPieces(tensors[t].elements, servers, min_piece_bytes);
    std::iota(by_load.begin(), by_load.end(), 0);
    std::partial_sort(by_load.begin(), by_load.begin() + k, by_load.end(), [&](int l, int r) {
      return std::tie(out.load[l], l) < std::tie(out.load[r], r);
    });
    const int64_t base = tensors[t].elements / k;
    const int64_t extra = tensors[t].elements % k;  // the first `extra` pieces get one more
    int64_t first = 0;
    for (int i = 0; i < k; ++i) {
      const Piece piece{t, first, base + (i < extra ? 1 : 0), by_load[i]};
      out.load[piece.server] += piece.elements;
      first += piece.elements;
      out.pieces.push_back(piece);
    }
  }
  return out;
}

// Fills servers up to the mean, cutting a large tensor wherever a server is full (as in
// McNaughton's wrap-around rule), so it uses as few pieces as filling needs. This wins where
// the even split makes more large pieces than there are servers.
Placement fillToMean(std::span<const TensorInfo> tensors, int servers, int64_t min_piece_bytes) {
  Placement out{{}, std::vector<int64_t>(servers, 0)};
  const int64_t min_elements = minPieceElements(min_piece_bytes);
  int64_t total = 0;
  for (const TensorInfo& t : tensors) total += t.elements;
  const int64_t target = (total + servers - 1) / servers;
  std::vector<char> used(servers);
  for (int t : bySizeDescending(tensors)) {
    std::fill(used.begin(), used.end(), 0);
    int pieces = 0;
    int64_t first = 0;
    while (first < tensors[t].elements) {
      int s = -1;
      for (int i = 0; i < servers; ++i) {
        if (!used[i] && (s < 0 || out.load[i] < out.load[s])) s = i;
      }
      const int64_t remaining = tensors[t].elements - first;
      const int64_t room = target - out.load[s];
      int64_t take = remaining;
      if (remaining >= 2 * min_elements && pieces + 1 < servers && room < remaining) {
        take = std::clamp(room, min_elements, remaining - min_elements);
      }
      out.pieces.push_back({t, first, take, s});
      out.load[s] += take;
      used[s] = 1;
      first += take;
      ++pieces;
    }
  }
  return out;
}

// Local search on a placement. Every accepted step lowers the sum of squared loads (so it ends,
// and never raises the largest load); the step cap only bounds time on pathological inputs.
class Refiner {
 public:
  Refiner(Placement& placement, int tensor_count, int64_t min_elements)
      : p_(placement), min_elements_(min_elements) {
    const int servers = static_cast<int>(p_.load.size());
    on_.resize(servers);
    holds_.assign(servers, std::vector<char>(tensor_count, 0));
    of_tensor_.resize(tensor_count);
    for (int i = 0; i < static_cast<int>(p_.pieces.size()); ++i) {
      on_[p_.pieces[i].server].push_back(i);
      holds_[p_.pieces[i].server][p_.pieces[i].tensor] = 1;
      of_tensor_[p_.pieces[i].tensor].push_back(i);
    }
  }

  void run() {
    const int64_t max_steps = 16 * static_cast<int64_t>(p_.pieces.size()) + 16;
    for (int64_t step = 0; step < max_steps; ++step) {
      if (moveOrSwap()) continue;
      bool leveled = false;
      for (int t = 0; t < static_cast<int>(of_tensor_.size()); ++t) leveled |= relevel(t);
      if (!leveled) return;
    }
  }

 private:
  // Moves one piece off the most loaded server, or swaps it for a smaller one, choosing the step
  // that leaves the pair's larger load lowest. Both new loads lie strictly between the old ones.
  bool moveOrSwap() {
    std::vector<int64_t>& load = p_.load;
    const int servers = static_cast<int>(load.size());
    const int a = static_cast<int>(std::max_element(load.begin(), load.end()) - load.begin());
    int64_t best = load[a];
    int best_b = -1, best_x = -1, best_y = -1;
    for (int b = 0; b < servers; ++b) {
      if (b == a) continue;
      for (int x : on_[a]) {
        const int64_t ex = p_.pieces[x].elements;
        const int tx = p_.pieces[x].tensor;
        if (!holds_[b][tx]) {
          const int64_t larger = std::max(load[a] - ex, load[b] + ex);
          if (larger < best) std::tie(best, best_b, best_x, best_y) = std::tuple(larger, b, x, -1);
        }
        for (int y : on_[b]) {
          const int64_t ey = p_.pieces[y].elements;
          const int ty = p_.pieces[y].tensor;
          if (ey >= ex) continue;
          // Swapping two pieces of one tensor keeps one each; otherwise neither side may
          // already hold the incoming tensor.
          if (tx != ty && (holds_[b][tx] || holds_[a][ty])) continue;
          const int64_t larger = std::max(load[a] - ex + ey, load[b] + ex - ey);
          if (larger < best) std::tie(best, best_b, best_x, best_y) = std::tuple(larger, b, x, y);
        }
      }
    }
    if (best_b < 0) return false;
    shift(best_x, best_b);
    if (best_y >= 0) shift(best_y, a);
    return true;
  }

  void shift(int piece, int to) {
    Piece& p = p_.pieces[piece];
    auto& from_list = on_[p.server];
    from_list.erase(std::find(from_list.begin(), from_list.end(), piece));
    on_[to].push_back(piece);
    // Mid-swap of two pieces of one tensor, `from` briefly holds both.
    holds_[p.server][p.tensor] = std::any_of(from_list.begin(), from_list.end(), [&](int other) {
      return p_.pieces[other].tensor == p.tensor;
    });
    holds_[to][p.tensor] = 1;
    p_.load[p.server] -= p.elements;
    p_.load[to] += p.elements;
    p.server = to;
  }

  // Re-sizes a split tensor's pieces (each still >= the minimum) so that its servers' loads are
  // as level as they can be: water-filling to the lowest level that holds the whole tensor.
  bool relevel(int t) {
    const std::vector<int>& pieces = of_tensor_[t];
    if (pieces.size() < 2) return false;
    std::vector<int64_t> base, size(pieces.size());
    int64_t elements = 0, high = 0;
    for (int i : pieces) {
      base.push_back(p_.load[p_.pieces[i].server] - p_.pieces[i].elements);
      elements += p_.pieces[i].elements;
      high = std::max(high, base.back());
    }
    auto fill = [&](int64_t level) {
      int64_t sum = 0;
      for (size_t j = 0; j < base.size(); ++j) {
        size[j] = std::max(min_elements_, level - base[j]);
        sum += size[j];
      }
      return sum;
    };
    int64_t lo = 0, hi = high + elements;  // fill(hi) >= elements
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (fill(mid) >= elements) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    // At the lowest sufficient level the surplus is below the count of pieces above the minimum;
    // take it off the last of them.
    int64_t surplus = fill(lo) - elements;
    for (size_t j = base.size(); j-- > 0 && surplus > 0;) {
      if (size[j] > min_elements_) --size[j], --surplus;
    }
    Wide before = 0, after = 0;
    for (size_t j = 0; j < base.size(); ++j) {
      const int64_t old_load = base[j] + p_.pieces[pieces[j]].elements;
      const int64_t new_load = base[j] + size[j];
      before += Wide{old_load} * old_load;
      after += Wide{new_load} * new_load;
    }
    if (after >= before) return false;
    for (size_t j = 0; j < pieces.size(); ++j) {
      Piece& p = p_.pieces[pieces[j]];
      p_.load[p.server] += size[j] - p.elements;
      p.elements = size[j];
    }
    // Pieces stay in element order; only their boundaries move.
    std::vector<int> in_order = pieces;
    std::sort(in_order.begin(), in_order.end(),
              [&](int l, int r) { return p_.pieces[l].first < p_.pieces[r].first; });
    int64_t first = 0;
    for (int i : in_order) {
      p_.pieces[i].first = first;
      first += p_.pieces[i].elements;
    }
    return true;
  }

  Placement& p_;
  int64_t min_elements_;
  std::vector<std::vector<int>> on_;         // piece indices per server
  std::vector<std::vector<char>> holds_;     // [server][tensor]
  std::vector<std::vector<int>> of_tensor_;  // piece indices per tensor
};

}  // namespace

int maxPieces(int64_t elements, int servers, int64_t min_piece_bytes) {
  const int64_t most = elements / minPieceElements(min_piece_bytes);
  return static_cast<int>(std::clamp<int64_t>(most, 1, servers));
}

std::vector<int64_t> ShardPlan::bytesPerServer() const {
  std::vector<int64_t> bytes(by_server.size(), 0);
  for (size_t s = 0; s < by_server.size(); ++s) {
    for (const Piece& p : by_server[s]) bytes[s] += p.bytes();
  }
  return bytes;
}

double ShardPlan::imbalance() const {
  const std::vector<int64_t> bytes = bytesPerServer();
  if (bytes.empty()) return 1.0;
  const int64_t total = std::accumulate(bytes.begin(), bytes.end(), int64_t{0});
  if (total == 0) return 1.0;
  const double mean = static_cast<double>(total) / static_cast<double>(bytes.size());
  return static_cast<double>(*std::max_element(bytes.begin(), bytes.end())) / mean;
}

core::Result<ShardPlan> planShards(std::span<const TensorInfo> tensors, int servers,
                                   const ShardOptions& options) {
  RM_RETURN_IF_ERROR(validate(tensors, servers, options));
  const int tensor_count = static_cast<int>(tensors.size());
  const int64_t min_elements = minPieceElements(options.min_piece_bytes);

  // Two starts, each refined; the better one wins (ties: the even split, which carries the
  // bound). Refining never raises the largest load, so the bound survives.
  Placement best;
  for (Placement candidate : {evenSplit(tensors, servers, options.min_piece_bytes),
                              fillToMean(tensors, servers, options.min_piece_bytes)}) {
    Refiner(candidate, tensor_count, min_elements).run();
    if (best.load.empty() ||
        std::tuple(candidate.maxLoad(), candidate.sumOfSquares(), candidate.pieces.size()) <
            std::tuple(best.maxLoad(), best.sumOfSquares(), best.pieces.size())) {
      best = std::move(candidate);
    }
  }

  ShardPlan plan;
  plan.by_server.resize(servers);
  plan.by_tensor.resize(tensor_count);
  for (const Piece& p : best.pieces) {
    plan.by_server[p.server].push_back(p);
    plan.by_tensor[p.tensor].push_back(p);
  }
  for (auto& list : plan.by_server) {
    std::sort(list.begin(), list.end(), [](const Piece& l, const Piece& r) {
      return std::tie(l.tensor, l.first) < std::tie(r.tensor, r.first);
    });
  }
  for (auto& list : plan.by_tensor) {
    std::sort(list.begin(), list.end(),
              [](const Piece& l, const Piece& r) { return l.first < r.first; });
  }
  return plan;
}

}  // namespace ringmaster::trainer::ps
