#include "trainer/ps/ps_worker.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "ringmaster/core/deadline.h"

namespace ringmaster::trainer::ps {
namespace {

using Clock = std::chrono::steady_clock;

size_t elementsOf(std::span<const Piece> pieces) {
  size_t n = 0;
  for (const Piece& piece : pieces) n += static_cast<size_t>(piece.elements);
  return n;
}

// The contract of gatherPieces/scatterPieces: every piece inside its tensor, the packed side
// exactly as long as the pieces.
void checkPieces(std::span<const Piece> pieces, const FlatLayout& layout, size_t flat,
                 size_t packed, const char* what) {
  bool ok = flat == layout.size && packed == elementsOf(pieces);
  for (const Piece& p : pieces) {
    ok = ok && p.tensor >= 0 && static_cast<size_t>(p.tensor) < layout.tensors.size() &&
         p.first >= 0 && p.elements >= 0 &&
         p.first + p.elements <= layout.tensors[static_cast<size_t>(p.tensor)].elements;
  }
  if (ok) return;
  std::fprintf(stderr,
               "ps: %s: contract broken: flat buffer of %zu floats (layout: %zu), packed %zu "
               "(pieces: %zu), or a piece outside its tensor\n",
               what, flat, layout.size, packed, elementsOf(pieces));
  std::abort();
}

}  // namespace

FlatLayout FlatLayout::of(const std::vector<model::ParamView>& views) {
  FlatLayout layout;
  for (const model::ParamView& view : views) {
    layout.tensors.push_back({view.name, static_cast<int64_t>(view.count)});
    layout.offsets.push_back(view.offset);
    layout.size = std::max(layout.size, view.offset + view.count);
  }
  return layout;
}

void gatherPieces(std::span<const Piece> pieces, const FlatLayout& layout,
                  std::span<const float> flat, std::span<float> out) {
  checkPieces(pieces, layout, flat.size(), out.size(), "gatherPieces");
  float* to = out.data();
  for (const Piece& p : pieces) {
    const float* from = flat.data() + layout.offsets[static_cast<size_t>(p.tensor)] + p.first;
    to = std::copy(from, from + p.elements, to);
  }
}

void scatterPieces(std::span<const Piece> pieces, const FlatLayout& layout,
                   std::span<const float> in, std::span<float> flat) {
  checkPieces(pieces, layout, flat.size(), in.size(), "scatterPieces");
  const float* from = in.data();
  for (const Piece& p : pieces) {
    std::copy(from, from + p.elements,
              flat.data() + layout.offsets[static_cast<size_t>(p.tensor)] + p.first);
    from += p.elements;
  }
}

core::Result<std::vector<std::unique_ptr<ParameterServer>>> makeServers(
    const ShardPlan& plan, const FlatLayout& layout, std::span<const float> params, int workers,
    const ServerOptions& options) {
  if (params.size() != layout.size) {
    return core::invalidArgument("parameter servers: " + std::to_string(params.size()) +
                                 " parameters for a layout of " + std::to_string(layout.size));
  }
  std::vector<std::unique_ptr<ParameterServer>> servers;
  for (int s = 0; s < plan.serverCount(); ++s) {
    const std::vector<Piece>& pieces = plan.by_server[static_cast<size_t>(s)];
    std::vector<float> initial(elementsOf(pieces));
    gatherPieces(pieces, layout, params, initial);
    RM_ASSIGN_OR_RETURN(auto server, ParameterServer::create(s, pieces, initial, workers, options));
    servers.push_back(std::move(server));
  }
  return servers;
}

std::vector<float> assembleParameters(std::span<const std::unique_ptr<ParameterServer>> servers,
                                      const FlatLayout& layout) {
  std::vector<float> flat(layout.size);
  for (const auto& server : servers)
    scatterPieces(server->pieces(), layout, server->values(), flat);
  return flat;
}

ShardBatches::ShardBatches(const data::Dataset& train, int shard, int shards, int batch,
                           uint64_t seed)
    : train_(train),
      batch_(batch),
      sampler_(train.size(), shard, shards, seed),
      batches_per_epoch_(static_cast<int64_t>(sampler_.numBatches(static_cast<size_t>(batch)))),
      images_(static_cast<size_t>(batch) * train.featureSize()),
      labels_(static_cast<size_t>(batch)) {
  sampler_.setEpoch(0);
}

int ShardBatches::load(int64_t step) {
  const int64_t epoch = step / batches_per_epoch_;
  if (epoch != sampler_.epoch()) sampler_.setEpoch(epoch);
  return data::gatherShardBatch(train_, sampler_, step % batches_per_epoch_, batch_, images_.data(),
                                labels_.data());
}

core::Result<std::unique_ptr<PsWorker>> PsWorker::create(WorkerId id, model::Model* model,
                                                         ShardPlan plan, FlatLayout layout,
                                                         std::vector<ServerConnection*> servers) {
  const std::string where = "worker " + std::to_string(id);
  if (layout.size != model->params().size() ||
      layout.tensors.size() != model->paramViews().size()) {
    return core::invalidArgument(where + ": the layout (" + std::to_string(layout.size) +
                                 " floats) is not the model's (" +
                                 std::to_string(model->params().size()) + ")");
  }
  if (servers.size() != static_cast<size_t>(plan.serverCount()) ||
      std::count(servers.begin(), servers.end(), nullptr) > 0) {
    return core::invalidArgument(where + ": " + std::to_string(servers.size()) +
                                 " connections for " + std::to_string(plan.serverCount()) +
                                 " servers (none may be null)");
  }
  if (plan.by_tensor.size() != layout.tensors.size()) {
    return core::invalidArgument(
        where + ": the plan places " + std::to_string(plan.by_tensor.size()) +
        " tensors, the model has " + std::to_string(layout.tensors.size()));
  }
  for (const auto& pieces : plan.by_server) {
    for (const Piece& p : pieces) {
      if (p.tensor < 0 || static_cast<size_t>(p.tensor) >= layout.tensors.size() || p.first < 0 ||
          p.elements < 1 ||
          p.first + p.elements > layout.tensors[static_cast<size_t>(p.tensor)].elements) {
        return core::invalidArgument(where + ": a piece of tensor " + std::to_string(p.tensor) +
                                     " lies outside the model's tensors");
      }
    }
  }
  return std::unique_ptr<PsWorker>(
      new PsWorker(id, *model, std::move(plan), std::move(layout), std::move(servers)));
}

PsWorker::PsWorker(WorkerId id, model::Model& model, ShardPlan plan, FlatLayout layout,
                   std::vector<ServerConnection*> servers)
    : id_(id),
      model_(model),
      plan_(std::move(plan)),
      layout_(std::move(layout)),
      servers_(std::move(servers)) {
  for (const auto& pieces : plan_.by_server) buffers_.emplace_back(elementsOf(pieces));
}

std::string PsWorker::where(int64_t step, int server) const {
  return "worker " + std::to_string(id_) + ": step " + std::to_string(step) + ": server " +
         std::to_string(server);
}

core::Status PsWorker::pull(int64_t step, PullView view) {
  last_ = {};
  const Clock::time_point start = Clock::now();
  for (size_t s = 0; s < servers_.size(); ++s) {
    RM_RETURN_IF_ERROR_CTX(servers_[s]->pull(id_, step, buffers_[s], view),
                           where(step, static_cast<int>(s)));
    scatterPieces(plan_.by_server[s], layout_, buffers_[s], model_.params());
    last_.bytes_pulled += buffers_[s].size() * sizeof(float);
  }
  last_.pull_seconds = core::secondsSince(start);
  return core::Status::Ok();
}

core::Result<float> PsWorker::computeAndPush(int64_t step, const float* images,
                                             const int32_t* labels, int samples) {
  const Clock::time_point start = Clock::now();
  const float loss = model_.forwardLoss(images, labels, samples, nullptr);
  model_.backward({});
  last_.compute_seconds = core::secondsSince(start);
  const Clock::time_point computed = Clock::now();
  last_.bytes_pushed = 0;
  for (size_t s = 0; s < servers_.size(); ++s) {
    gatherPieces(plan_.by_server[s], layout_, model_.grads(), buffers_[s]);
    RM_RETURN_IF_ERROR_CTX(servers_[s]->push(id_, step, buffers_[s]),
                           where(step, static_cast<int>(s)));
    last_.bytes_pushed += buffers_[s].size() * sizeof(float);
    const uint64_t pushes = servers_[s]->serverPushes();
    last_.server_pushes = s == 0 ? pushes : std::min(last_.server_pushes, pushes);
  }
  last_.push_seconds = core::secondsSince(computed);
  return loss;
}

core::Result<float> PsWorker::step(int64_t step, ShardBatches& batches) {
  RM_RETURN_IF_ERROR(pull(step));
  const int samples = batches.load(step);
  return computeAndPush(step, batches.images(), batches.labels(), samples);
}

core::Result<std::vector<float>> PsWorker::run(int64_t first, int64_t count,
                                               ShardBatches& batches) {
  std::vector<float> losses;
  for (int64_t k = first; k < first + count; ++k) {
    RM_ASSIGN_OR_RETURN(const float loss, step(k, batches));
    losses.push_back(loss);
  }
  return losses;
}

}  // namespace ringmaster::trainer::ps
