#include "trainer/config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace ringmaster::trainer {
namespace {

using core::Result;
using core::Status;

// Walks a YAML mapping, dispatching known keys and rejecting unknown ones with their path.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  Status check() const {
    if (!node_.IsMap()) return core::invalidArgument(path_ + ": expected a mapping");
    return Status::Ok();
  }

  template <typename T>
  Status read(const std::string& key, T* out) {
    known_.insert(key);
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) return Status::Ok();
    return convert(value, keyPath(key), out);
  }

  Status readSub(const std::string& key, const std::function<Status(MapReader&)>& fn) {
    known_.insert(key);
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) return Status::Ok();
    MapReader sub(value, keyPath(key));
    RM_RETURN_IF_ERROR(sub.check());
    RM_RETURN_IF_ERROR(fn(sub));
    return sub.rejectUnknown();
  }

  Status rejectUnknown() const {
    for (const auto& kv : node_) {
      const std::string key = kv.first.as<std::string>();
      if (!known_.count(key)) {
        std::string known_list;
        for (const auto& k : known_) known_list += (known_list.empty() ? "" : ", ") + k;
        return core::invalidArgument(keyPath(key) + ": unknown key (known: " + known_list + ")");
      }
    }
    return Status::Ok();
  }

  std::string keyPath(const std::string& key) const { return path_ + "." + key; }

 private:
  static Status typeError(const std::string& path, const YAML::Node& v, const char* want) {
    std::ostringstream text;
    text << path << ": expected " << want;
    if (v.IsScalar()) text << ", got '" << v.Scalar() << "'";
    return core::invalidArgument(text.str());
  }
  static Status convert(const YAML::Node& v, const std::string& path, std::string* out) {
    if (!v.IsScalar()) return typeError(path, v, "a string");
    *out = v.Scalar();
    return Status::Ok();
  }
  static Status convert(const YAML::Node& v, const std::string& path, int64_t* out) {
    int64_t x = 0;
    if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x))
      return typeError(path, v, "an integer");
    *out = x;
    return Status::Ok();
  }
  static Status convert(const YAML::Node& v, const std::string& path, uint64_t* out) {
    uint64_t x = 0;
    if (!v.IsScalar() || !YAML::convert<uint64_t>::decode(v, x))
      return typeError(path, v, "a non-negative integer");
    *out = x;
    return Status::Ok();
  }
  static Status convert(const YAML::Node& v, const std::string& path, int* out) {
    int64_t x = 0;
    RM_RETURN_IF_ERROR(convert(v, path, &x));
    *out = static_cast<int>(x);
    return Status::Ok();
  }
  static Status convert(const YAML::Node& v, const std::string& path, double* out) {
    double x = 0;
    if (!v.IsScalar() || !YAML::convert<double>::decode(v, x))
      return typeError(path, v, "a number");
    *out = x;
    return Status::Ok();
  }
  static Status convert(const YAML::Node& v, const std::string& path, bool* out) {
    bool x = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, x))
      return typeError(path, v, "true or false");
    *out = x;
    return Status::Ok();
  }
  static Status convert(const YAML::Node& v, const std::string& path, std::vector<int>* out) {
    if (!v.IsSequence()) return typeError(path, v, "a list of integers");
    out->clear();
    for (size_t i = 0; i < v.size(); ++i) {
      int x = 0;
      RM_RETURN_IF_ERROR(convert(v[i], path + "[" + std::to_string(i) + "]", &x));
      out->push_back(x);
    }
    return Status::Ok();
  }

  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
};

Status readConfig(MapReader& t, TrainerConfig* c) {
  RM_RETURN_IF_ERROR(t.readSub("model", [&](MapReader& m) {
    RM_RETURN_IF_ERROR(m.read("type", &c->model.type));
    RM_RETURN_IF_ERROR(m.read("hidden", &c->model.hidden));
    RM_RETURN_IF_ERROR(m.read("channels", &c->model.conv_channels));
    return m.read("cnnHidden", &c->model.cnn_hidden);
  }));
  RM_RETURN_IF_ERROR(t.readSub("dataset", [&](MapReader& d) {
    RM_RETURN_IF_ERROR(d.read("name", &c->dataset.name));
    return d.read("path", &c->dataset.path);
  }));
  RM_RETURN_IF_ERROR(t.read("epochs", &c->epochs));
  RM_RETURN_IF_ERROR(t.read("batchSize", &c->batch_size));
  RM_RETURN_IF_ERROR(t.readSub("optimizer", [&](MapReader& o) {
    RM_RETURN_IF_ERROR(o.read("type", &c->optimizer.type));
    RM_RETURN_IF_ERROR(o.read("learningRate", &c->optimizer.learning_rate));
    RM_RETURN_IF_ERROR(o.read("momentum", &c->optimizer.momentum));
    RM_RETURN_IF_ERROR(o.read("weightDecay", &c->optimizer.weight_decay));
    RM_RETURN_IF_ERROR(o.read("nesterov", &c->optimizer.nesterov));
    RM_RETURN_IF_ERROR(o.read("schedule", &c->lr_schedule));
    RM_RETURN_IF_ERROR(o.read("beta1", &c->optimizer.beta1));
    RM_RETURN_IF_ERROR(o.read("beta2", &c->optimizer.beta2));
    return o.read("epsilon", &c->optimizer.epsilon);
  }));
  RM_RETURN_IF_ERROR(t.read("bucketCapMB", &c->bucket_cap_mb));
  RM_RETURN_IF_ERROR(t.read("firstBucketCapMB", &c->first_bucket_cap_mb));
  RM_RETURN_IF_ERROR(t.readSub("checkpoint", [&](MapReader& k) {
    RM_RETURN_IF_ERROR(k.read("path", &c->checkpoint.path));
    RM_RETURN_IF_ERROR(k.read("everySteps", &c->checkpoint.every_steps));
    return k.read("keep", &c->checkpoint.keep);
  }));
  RM_RETURN_IF_ERROR(t.read("seed", &c->seed));
  RM_RETURN_IF_ERROR(t.read("backend", &c->backend));
  RM_RETURN_IF_ERROR(t.read("device", &c->device));
  RM_RETURN_IF_ERROR(t.read("precision", &c->precision));
  RM_RETURN_IF_ERROR(t.read("cudaGraph", &c->cuda_graph));
  RM_RETURN_IF_ERROR(t.read("blasThreads", &c->blas_threads));
  RM_RETURN_IF_ERROR(t.read("metricsPort", &c->metrics_port));
  RM_RETURN_IF_ERROR(t.read("maxSteps", &c->max_steps));
  RM_RETURN_IF_ERROR(t.read("logEverySteps", &c->log_every_steps));
  return t.read("commTimeoutSeconds", &c->comm_timeout_seconds);
}

}  // namespace

Result<TrainerConfig> parseTrainerConfig(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return core::invalidArgument(source + ": invalid YAML at line " +
                                 std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  TrainerConfig config;
  if (!root || root.IsNull()) return config;
  // Accept either spec.trainer's body itself or a document with a top-level `trainer:` key.
  std::string path = "trainer";
  if (root.IsMap() && root["trainer"] && root.size() == 1) root = root["trainer"];
  MapReader reader(root, path);
  Status s = reader.check();
  if (s.ok()) s = readConfig(reader, &config);
  if (s.ok()) s = reader.rejectUnknown();
  if (s.ok()) s = validate(config);
  if (!s.ok()) return std::move(s).withContext(source);
  return config;
}

Result<TrainerConfig> loadTrainerConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::errnoError("config file " + path, errno);
  std::stringstream text;
  text << in.rdbuf();
  return parseTrainerConfig(text.str(), path);
}

Status validate(const TrainerConfig& c) {
  auto bad = [](const std::string& key, const std::string& why) {
    return core::invalidArgument("trainer." + key + ": " + why);
  };
  if (c.model.type != "mlp" && c.model.type != "cnn")
    return bad("model.type", "must be mlp or cnn, got '" + c.model.type + "'");
  for (size_t i = 0; i < c.model.hidden.size(); ++i)
    if (c.model.hidden[i] < 1 || c.model.hidden[i] > 65536)
      return bad("model.hidden[" + std::to_string(i) + "]", "must be in [1, 65536]");
  if (c.model.type == "cnn" && c.model.conv_channels.size() != 2)
    return bad("model.channels", "the cnn has exactly two conv layers: give two channel counts");
  for (size_t i = 0; i < c.model.conv_channels.size(); ++i)
    if (c.model.conv_channels[i] < 1 || c.model.conv_channels[i] > 1024)
      return bad("model.channels[" + std::to_string(i) + "]", "must be in [1, 1024]");
  if (c.model.cnn_hidden < 0) return bad("model.cnnHidden", "must be >= 0");
  if (c.dataset.name != "fashion-mnist")
    return bad("dataset.name", "only fashion-mnist is built in, got '" + c.dataset.name + "'");
  if (c.dataset.path.empty()) return bad("dataset.path", "must not be empty");
  if (c.epochs < 1 || c.epochs > 100000) return bad("epochs", "must be in [1, 100000]");
  if (c.batch_size < 1 || c.batch_size > 65536) return bad("batchSize", "must be in [1, 65536]");
  if (!(c.bucket_cap_mb > 0) || c.bucket_cap_mb > 4096)
    return bad("bucketCapMB", "must be in (0, 4096]");
  if (!(c.first_bucket_cap_mb > 0)) return bad("firstBucketCapMB", "must be > 0");
  if (c.checkpoint.every_steps < 0) return bad("checkpoint.everySteps", "must be >= 0");
  if (c.checkpoint.keep < 1) return bad("checkpoint.keep", "must be >= 1");
  static const std::set<std::string> kBackends = {"auto", "nccl", "gloo", "mpi", "shm", "inproc"};
  if (!kBackends.count(c.backend))
    return bad("backend", "must be one of auto, nccl, gloo, mpi, shm; got '" + c.backend + "'");
  if (c.device != "auto" && c.device != "cpu" && c.device != "cuda")
    return bad("device", "must be auto, cpu or cuda, got '" + c.device + "'");
  if (c.precision != "fp32" && c.precision != "bf16")
    return bad("precision", "must be fp32 or bf16, got '" + c.precision + "'");
  if (c.precision == "bf16" && c.device == "cpu")
    return bad("precision", "bf16 runs on the GPU only (device cpu trains in fp32)");
  if (c.backend == "nccl" && c.device == "cpu")
    return bad("backend", "nccl needs device cuda (or auto on a GPU)");
  if (c.blas_threads < 1 || c.blas_threads > 256) return bad("blasThreads", "must be in [1, 256]");
  if (c.metrics_port < -1 || c.metrics_port > 65535)
    return bad("metricsPort", "must be -1 (off), 0 (any) or a port");
  if (c.max_steps < 0) return bad("maxSteps", "must be >= 0");
  if (c.log_every_steps < 0) return bad("logEverySteps", "must be >= 0");
  if (c.comm_timeout_seconds < 1) return bad("commTimeoutSeconds", "must be >= 1");
  const auto& o = c.optimizer;
  if (o.type != "sgd" && o.type != "adam")
    return bad("optimizer.type", "must be sgd or adam, got '" + o.type + "'");
  if (!(o.learning_rate > 0)) return bad("optimizer.learningRate", "must be > 0");
  if (c.lr_schedule != "constant" && c.lr_schedule != "cosine")
    return bad("optimizer.schedule", "must be constant or cosine, got '" + c.lr_schedule + "'");
  if (o.momentum < 0 || o.momentum >= 1) return bad("optimizer.momentum", "must be in [0, 1)");
  if (o.weight_decay < 0) return bad("optimizer.weightDecay", "must be >= 0");
  if (o.beta1 < 0 || o.beta1 >= 1) return bad("optimizer.beta1", "must be in [0, 1)");
  if (o.beta2 < 0 || o.beta2 >= 1) return bad("optimizer.beta2", "must be in [0, 1)");
  if (!(o.epsilon > 0)) return bad("optimizer.epsilon", "must be > 0");
  return Status::Ok();
}

std::string describe(const TrainerConfig& c) {
  std::ostringstream out;
  out << "model=" << c.model.type;
  if (c.model.type == "mlp") {
    out << " hidden=[";
    for (size_t i = 0; i < c.model.hidden.size(); ++i) out << (i ? "," : "") << c.model.hidden[i];
    out << "]";
  } else {
    out << " channels=[" << c.model.conv_channels[0] << "," << c.model.conv_channels[1] << "]";
  }
  out << " epochs=" << c.epochs << " batchSize=" << c.batch_size
      << " optimizer=" << c.optimizer.type << " lr=" << c.optimizer.learning_rate
      << " schedule=" << c.lr_schedule << " momentum=" << c.optimizer.momentum
      << " weightDecay=" << c.optimizer.weight_decay << " bucketCapMB=" << c.bucket_cap_mb
      << " backend=" << c.backend << " device=" << c.device << " precision=" << c.precision
      << " seed=" << c.seed << " blasThreads=" << c.blas_threads << " data=" << c.dataset.path
      << " checkpoint=" << (c.checkpoint.path.empty() ? "off" : c.checkpoint.path);
  return out.str();
}

}  // namespace ringmaster::trainer
