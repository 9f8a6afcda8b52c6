#include "trainer/config.h"

#include <fstream>
#include <sstream>

#include "ringmaster/kube/yaml_documents.h"

namespace ringmaster::trainer {

core::Result<kube::TrainerSpec> parseTrainerSpec(const std::string& yaml_text,
                                                 const std::string& source) {
  RM_ASSIGN_OR_RETURN(std::vector<nlohmann::json> documents,
                      kube::parseYamlDocuments(yaml_text, source));
  if (documents.size() > 1) {
    return core::invalidArgument(source + ": " + std::to_string(documents.size()) +
                                 " YAML documents; spec.trainer is one");
  }
  nlohmann::json body = documents.empty() ? nlohmann::json::object() : documents[0];
  if (body.is_object() && body.size() == 1 && body.contains("trainer")) body = body["trainer"];
  if (body.is_null()) body = nlohmann::json::object();
  kube::TrainerSpec spec;
  const kube::FieldPath document;  // a child borrows its parent: both live here
  if (core::Status s = kube::fromJson(body, document.child("trainer"), spec); !s.ok()) {
    return std::move(s).withContext(source);
  }
  return spec;
}

core::Result<kube::TrainerSpec> loadTrainerSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return core::errnoError("config file " + path, errno);
  std::stringstream text;
  text << in.rdbuf();
  return parseTrainerSpec(text.str(), path);
}

core::Result<TrainerConfig> trainerConfig(const kube::TrainerSpec& spec) {
  if (std::vector<contract::FieldError> errors = contract::validateTrainer(spec, "trainer");
      !errors.empty()) {
    return core::invalidArgument(contract::describe(errors));
  }
  const contract::TrainerSettings s = contract::trainerSettings(spec);
  TrainerConfig c;
  c.model.type = contract::name(s.model.type);
  c.model.hidden.assign(s.model.hidden.begin(), s.model.hidden.end());
  c.model.conv_channels.assign(s.model.channels.begin(), s.model.channels.end());
  c.model.cnn_hidden = s.model.cnn_hidden;
  c.dataset = {s.dataset.name, s.dataset.path};
  c.epochs = s.epochs;
  c.batch_size = s.batch_size;
  c.global_batch_size = s.global_batch_size;
  c.optimizer.type = contract::name(s.optimizer.type);
  c.optimizer.learning_rate = s.optimizer.learning_rate;
  c.optimizer.momentum = s.optimizer.momentum;
  c.optimizer.weight_decay = s.optimizer.weight_decay;
  c.optimizer.nesterov = s.optimizer.nesterov;
  c.optimizer.beta1 = s.optimizer.beta1;
  c.optimizer.beta2 = s.optimizer.beta2;
  c.optimizer.epsilon = s.optimizer.epsilon;
  c.lr_schedule = contract::name(s.optimizer.schedule);
  c.bucket_cap_mb = s.bucket_cap_mb;
  c.first_bucket_cap_mb = s.first_bucket_cap_mb;
  c.checkpoint = {s.checkpoint.path, s.checkpoint.every_steps, s.checkpoint.keep};
  c.seed = s.seed;
  c.device = contract::name(s.device);
  c.precision = contract::name(s.precision);
  c.cuda_graph = s.cuda_graph;
  c.blas_threads = s.blas_threads;
  c.max_steps = s.max_steps;
  c.log_every_steps = s.log_every_steps;
  c.comm_timeout_seconds = s.comm_timeout_seconds;
  c.pipeline.stages = s.pipeline.stages;
  c.pipeline.micro_batches = s.pipeline.micro_batches;
  c.pipeline.schedule = contract::name(s.pipeline.schedule);
  c.pipeline.partition.assign(s.pipeline.partition.begin(), s.pipeline.partition.end());
  c.tensor = s.tensor;
  return c;
}

core::Result<TrainerConfig> parseTrainerConfig(const std::string& yaml_text,
                                               const std::string& source) {
  RM_ASSIGN_OR_RETURN(kube::TrainerSpec spec, parseTrainerSpec(yaml_text, source));
  core::Result<TrainerConfig> config = trainerConfig(spec);
  if (!config.ok()) return config.status().withContext(source);
  return config;
}

TrainerConfig defaultTrainerConfig() { return *trainerConfig({}); }

core::Status resolveBatchSize(TrainerConfig& config, int world) {
  if (config.global_batch_size <= 0) return core::Status::Ok();
  if (world < 1 || config.global_batch_size % world != 0) {
    return core::invalidArgument(
        "trainer.globalBatchSize: " + std::to_string(config.global_batch_size) +
        " samples do not split evenly among " + std::to_string(world) +
        " ranks; choose a multiple of every world size the job may run at");
  }
  config.batch_size = config.global_batch_size / world;
  return core::Status::Ok();
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
  out << " epochs=" << c.epochs << " batchSize=" << c.batch_size;
  if (c.global_batch_size > 0) out << " globalBatchSize=" << c.global_batch_size;
  out << " optimizer=" << c.optimizer.type << " lr=" << c.optimizer.learning_rate
      << " schedule=" << c.lr_schedule << " momentum=" << c.optimizer.momentum
      << " weightDecay=" << c.optimizer.weight_decay << " bucketCapMB=" << c.bucket_cap_mb
      << " backend=" << c.backend << " device=" << c.device << " precision=" << c.precision
      << " seed=" << c.seed << " blasThreads=" << c.blas_threads << " data=" << c.dataset.path
      << " checkpoint=" << (c.checkpoint.path.empty() ? "off" : c.checkpoint.path);
  if (c.pipeline.stages > 1) {
    out << " pipeline=" << c.pipeline.stages << " stages x " << c.pipeline.micro_batches
        << " micro-batches (" << c.pipeline.schedule << ")";
  }
  if (c.tensor > 1) out << " tensor=" << c.tensor;
  return out.str();
}

}  // namespace ringmaster::trainer
