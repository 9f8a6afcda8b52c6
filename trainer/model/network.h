#pragma once
// The network a ModelConfig describes, as a list of layers in forward order, before any
// parameters exist: what Model (the whole network on one rank) and ModelStage (a pipeline
// stage's contiguous slice of it) are both built from, so the two cannot disagree on a layer.
//
// Thread-safety: a Network is a value; nothing shared. Failure: buildNetwork returns
// kInvalidArgument naming the field as the TrainingJob spec spells it
// ("model.hidden[1]: must be >= 1, got 0").

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringmaster/core/status.h"
#include "trainer/model/layer.h"
#include "trainer/model/model.h"

namespace ringmaster::trainer::model {

struct Network {
  std::vector<std::unique_ptr<Layer>> layers;
  std::string signature;  // "mlp:784-512-512-10"
  size_t input_size = 0;  // floats per sample
  int num_classes = 0;
};

// The layers of `config` with workspaces for batches of up to max_batch samples; with a tensor
// shard of more than one rank, this rank's parts of the MLP's layer pairs (dense_layer.h).
core::Result<Network> buildNetwork(const ModelConfig& config, int max_batch,
                                   TensorShard shard = {});

// Parameters of layers [first, end) laid out in `params` the way Model lays them out (each layer's
// weight then bias, in order). Each tensor draws from its own PRNG stream, numbered over the whole
// network, so a slice gets exactly the values the whole network has there, and a tensor-parallel
// part exactly its block of the whole tensor.
void initParameters(const Network& network, size_t first, size_t end, uint64_t seed,
                    std::span<float> params);

// The number of parameters of layer i.
size_t parameterCount(const Layer& layer);

// How layers [first, end) lay their parameters out in one flat buffer: each layer's weight then
// bias, in forward order (what Model and ModelStage both hold).
struct ParameterLayout {
  std::vector<size_t> layer_offset, layer_count;  // per layer, from `first`
  std::vector<ParamView> views;                   // per tensor, offsets into the buffer
  size_t total = 0;
  size_t max_inner_input = 0;  // the widest input of a layer after the first (gradient scratch)
};
ParameterLayout layoutParameters(const Network& network, size_t first, size_t end);

}  // namespace ringmaster::trainer::model
