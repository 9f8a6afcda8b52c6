#include "trainer/model/network.h"

#include <algorithm>
#include <string>
#include <vector>

#include "trainer/model/conv_layer.h"
#include "trainer/model/dense_layer.h"
#include "trainer/model/init.h"

namespace ringmaster::trainer::model {
namespace {

constexpr int kConvKernel = 5;
// sgemm takes int dimensions; keep every matrix and the flat buffers well inside that.
constexpr size_t kMaxElements = size_t{1} << 31;

// kind + index, e.g. "fc2" or "-c16". (Built by append: GCC 12 at -O3 warns falsely on
// "short literal" + std::string&&.)
std::string layerName(const char* kind, int index) {
  std::string name = kind;
  name += std::to_string(index);
  return name;
}

core::Status positive(const std::string& field, int value) {
  if (value >= 1) return core::Status::Ok();
  return core::invalidArgument(field + ": must be >= 1, got " + std::to_string(value));
}

}  // namespace

size_t parameterCount(const Layer& layer) {
  size_t count = 0;
  for (const ParamSpec& p : layer.paramSpecs()) count += p.count;
  return count;
}

ParameterLayout layoutParameters(const Network& network, size_t first, size_t end) {
  ParameterLayout out;
  for (size_t i = first; i < end; ++i) {
    const Layer& layer = *network.layers[i];
    out.layer_offset.push_back(out.total);
    size_t count = 0;
    for (const ParamSpec& p : layer.paramSpecs()) {
      out.views.push_back({p.name, out.total + count, p.count});
      count += p.count;
    }
    out.layer_count.push_back(count);
    out.total += count;
    if (i > first) out.max_inner_input = std::max(out.max_inner_input, layer.inputSize());
  }
  return out;
}

void initParameters(const Network& network, size_t first, size_t end, uint64_t seed,
                    std::span<float> params) {
  // One PRNG stream per tensor: resizing one layer leaves the others' init unchanged.
  size_t tensor = 0, offset = 0;
  std::vector<float> whole;
  for (size_t i = 0; i < end; ++i) {
    for (const ParamSpec& p : network.layers[i]->paramSpecs()) {
      if (i >= first) {
        Rng rng(seed, tensor);
        std::span<float> mine = params.subspan(offset, p.count);
        if (!p.block) {
          kaimingUniformInit(mine, p.fan_in, rng);
        } else {
          // A part of a split tensor: draw the whole one, keep this rank's block.
          const TensorBlock& b = *p.block;
          whole.resize(b.full_rows * b.full_cols);
          kaimingUniformInit(whole, p.fan_in, rng);
          for (size_t r = 0; r < b.rows; ++r) {
            const float* from = whole.data() + (b.row0 + r) * b.full_cols + b.col0;
            std::copy(from, from + b.cols, mine.begin() + r * b.cols);
          }
        }
        offset += p.count;
      }
      ++tensor;
    }
  }
}

core::Result<Network> buildNetwork(const ModelConfig& config, int max_batch, TensorShard shard) {
  Network net;
  if (shard.size < 1 || shard.rank < 0 || shard.rank >= shard.size) {
    return core::invalidArgument("parallelism.tensor: rank " + std::to_string(shard.rank) +
                                 " is not one of " + std::to_string(shard.size));
  }
  if (shard.size > 1 && config.type != ModelKind::kMlp) {
    return core::invalidArgument("parallelism.tensor: " + std::to_string(shard.size) +
                                 " splits an mlp's dense layers; the " +
                                 modelKindName(config.type) +
                                 "'s conv layers cannot be split (use tensor 1)");
  }
  RM_RETURN_IF_ERROR(positive("max_batch", max_batch));
  RM_RETURN_IF_ERROR(positive("model.inputChannels", config.input_channels));
  RM_RETURN_IF_ERROR(positive("model.inputHeight", config.input_height));
  RM_RETURN_IF_ERROR(positive("model.inputWidth", config.input_width));
  if (config.num_classes < 2) {
    return core::invalidArgument("model.numClasses: must be >= 2, got " +
                                 std::to_string(config.num_classes));
  }
  const int c0 = config.input_channels, h0 = config.input_height, w0 = config.input_width;
  if (static_cast<size_t>(c0) * h0 >= kMaxElements ||
      static_cast<size_t>(c0) * h0 * w0 >= kMaxElements) {
    return core::invalidArgument("model: input " + std::to_string(c0) + "x" + std::to_string(h0) +
                                 "x" + std::to_string(w0) + " is too large");
  }
  net.input_size = static_cast<size_t>(c0) * h0 * w0;
  if (net.input_size * max_batch >= kMaxElements) {
    return core::invalidArgument("max_batch: " + std::to_string(max_batch) + " samples of " +
                                 std::to_string(net.input_size) + " floats is too large");
  }
  net.num_classes = config.num_classes;

  int fc_index = 0;
  auto add_dense = [&](int in, int out, bool relu) {
    net.layers.push_back(std::make_unique<DenseLayer>(layerName("fc", ++fc_index), in, out, relu));
  };
  if (config.type == ModelKind::kMlp) {
    net.signature = "mlp:" + std::to_string(net.input_size);
    // With tensor parallelism, layers 2k and 2k + 1 are a column- then row-parallel pair; an
    // odd last layer is whole on every rank of the group.
    const size_t layers = config.hidden.size() + 1;
    auto role = [&](size_t i) {
      if (shard.size == 1) return TensorRole::kNone;
      if (i % 2 == 1) return TensorRole::kRow;
      return i + 1 < layers ? TensorRole::kColumn : TensorRole::kNone;
    };
    auto add = [&](size_t i, int in, int out, bool relu) {
      net.layers.push_back(
          std::make_unique<DenseLayer>(layerName("fc", ++fc_index), in, out, relu, role(i), shard));
    };
    int width = static_cast<int>(net.input_size);
    for (size_t i = 0; i < config.hidden.size(); ++i) {
      const std::string field = "model.hidden[" + std::to_string(i) + "]";
      RM_RETURN_IF_ERROR(positive(field, config.hidden[i]));
      if (role(i) == TensorRole::kColumn && config.hidden[i] % shard.size != 0) {
        return core::invalidArgument("parallelism.tensor: " + std::to_string(shard.size) +
                                     " does not divide " + field + " (" +
                                     std::to_string(config.hidden[i]) + "), which it splits");
      }
      add(i, width, config.hidden[i], /*relu=*/true);
      width = config.hidden[i];
      net.signature += layerName("-", width);
    }
    add(config.hidden.size(), width, net.num_classes, /*relu=*/false);
  } else {
    if (config.conv_channels.empty()) {
      return core::invalidArgument("model.convChannels: a cnn needs at least one conv block");
    }
    net.signature =
        "cnn:" + std::to_string(c0) + "x" + std::to_string(h0) + "x" + std::to_string(w0);
    int c = c0, h = h0, w = w0;
    for (size_t i = 0; i < config.conv_channels.size(); ++i) {
      const std::string field = "model.convChannels[" + std::to_string(i) + "]";
      RM_RETURN_IF_ERROR(positive(field, config.conv_channels[i]));
      if (h < 2 || w < 2) {
        return core::invalidArgument(field + ": the input is " + std::to_string(h) + "x" +
                                     std::to_string(w) + " here, too small for a 2x2 max-pool");
      }
      const size_t patch_rows = static_cast<size_t>(kConvKernel) * kConvKernel * c * h * w;
      const size_t conv_out = static_cast<size_t>(config.conv_channels[i]) * h * w;
      if (patch_rows >= kMaxElements || conv_out * max_batch >= kMaxElements) {
        return core::invalidArgument(field + ": " + std::to_string(config.conv_channels[i]) +
                                     " channels on " + std::to_string(h) + "x" + std::to_string(w) +
                                     " with max_batch " + std::to_string(max_batch) +
                                     " is too large");
      }
      net.layers.push_back(
          std::make_unique<ConvReluPoolLayer>(layerName("conv", static_cast<int>(i) + 1), c, h, w,
                                              config.conv_channels[i], kConvKernel, max_batch));
      c = config.conv_channels[i];
      h /= 2;
      w /= 2;
      net.signature += layerName("-c", c);
    }
    int width = c * h * w;
    if (config.cnn_hidden < 0) {
      return core::invalidArgument("model.cnnHidden: must be >= 0 (0 = none), got " +
                                   std::to_string(config.cnn_hidden));
    }
    if (config.cnn_hidden > 0) {
      add_dense(width, config.cnn_hidden, /*relu=*/true);
      width = config.cnn_hidden;
      net.signature += layerName("-h", width);
    }
    add_dense(width, net.num_classes, /*relu=*/false);
  }
  net.signature += layerName("-", net.num_classes);

  size_t total = 0, max_act = 0;
  for (const auto& layer : net.layers) {
    total += parameterCount(*layer);
    max_act = std::max({max_act, layer->inputSize(), layer->outputSize()});
  }
  if (total >= kMaxElements || max_act * max_batch >= kMaxElements) {
    return core::invalidArgument("model: " + net.signature + " with max_batch " +
                                 std::to_string(max_batch) + " is too large (" +
                                 std::to_string(total) + " parameters)");
  }
  return net;
}

}  // namespace ringmaster::trainer::model
