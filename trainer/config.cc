#include "trainer/config.h"

#include <fstream>
#include <sstream>
#include <vector>

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
  TrainerConfig config;
  config.settings = contract::trainerSettings(spec);
  return config;
}

core::Result<TrainerConfig> parseTrainerConfig(const std::string& yaml_text,
                                               const std::string& source) {
  RM_ASSIGN_OR_RETURN(kube::TrainerSpec spec, parseTrainerSpec(yaml_text, source));
  core::Result<TrainerConfig> config = trainerConfig(spec);
  if (!config.ok()) return config.status().withContext(source);
  return config;
}

contract::TrainerSettings defaultTrainerSettings() { return trainerConfig({})->settings; }

core::Status resolveBatchSize(contract::TrainerSettings& settings, int world) {
  if (settings.global_batch_size <= 0) return core::Status::Ok();
  if (world < 1 || settings.global_batch_size % world != 0) {
    return core::invalidArgument(
        "trainer.globalBatchSize: " + std::to_string(settings.global_batch_size) +
        " samples do not split evenly among " + std::to_string(world) +
        " ranks; choose a multiple of every world size the job may run at");
  }
  settings.batch_size = settings.global_batch_size / world;
  return core::Status::Ok();
}

std::string describe(const TrainerConfig& config) {
  const contract::TrainerSettings& s = config.settings;
  std::ostringstream out;
  out << "model=" << contract::name(s.model.type);
  if (s.model.type == contract::ModelType::kMlp) {
    out << " hidden=[";
    for (size_t i = 0; i < s.model.hidden.size(); ++i) out << (i ? "," : "") << s.model.hidden[i];
    out << "]";
  } else {
    out << " channels=[" << s.model.channels[0] << "," << s.model.channels[1] << "]";
  }
  out << " epochs=" << s.epochs << " batchSize=" << s.batch_size;
  if (s.global_batch_size > 0) out << " globalBatchSize=" << s.global_batch_size;
  out << " optimizer=" << contract::name(s.optimizer.type) << " lr=" << s.optimizer.learning_rate
      << " schedule=" << contract::name(s.optimizer.schedule)
      << " momentum=" << s.optimizer.momentum << " weightDecay=" << s.optimizer.weight_decay
      << " bucketCapMB=" << s.bucket_cap_mb << " backend=" << config.backend
      << " device=" << contract::name(s.device) << " precision=" << contract::name(s.precision)
      << " seed=" << s.seed << " blasThreads=" << s.blas_threads << " data=" << s.dataset.path
      << " checkpoint=" << (s.checkpoint.path.empty() ? "off" : s.checkpoint.path);
  if (s.pipeline.stages > 1) {
    out << " pipeline=" << s.pipeline.stages << " stages x " << s.pipeline.micro_batches
        << " micro-batches (" << contract::name(s.pipeline.schedule) << ")";
  }
  if (s.tensor > 1) out << " tensor=" << s.tensor;
  return out.str();
}

model::ModelConfig modelConfig(const contract::TrainerSettings::Model& model) {
  model::ModelConfig config;
  switch (model.type) {
    case contract::ModelType::kMlp:
      config.type = model::ModelKind::kMlp;
      break;
    case contract::ModelType::kCnn:
      config.type = model::ModelKind::kCnn;
      break;
  }
  config.hidden.assign(model.hidden.begin(), model.hidden.end());
  config.conv_channels.assign(model.channels.begin(), model.channels.end());
  config.cnn_hidden = model.cnn_hidden;
  return config;
}

optim::OptimizerConfig optimizerConfig(const contract::TrainerSettings::Optimizer& optimizer) {
  optim::OptimizerConfig config;
  switch (optimizer.type) {
    case contract::OptimizerType::kSgd:
      config.type = optim::OptimizerKind::kSgd;
      break;
    case contract::OptimizerType::kAdam:
      config.type = optim::OptimizerKind::kAdam;
      break;
  }
  config.learning_rate = optimizer.learning_rate;
  config.momentum = optimizer.momentum;
  config.weight_decay = optimizer.weight_decay;
  config.nesterov = optimizer.nesterov;
  config.beta1 = optimizer.beta1;
  config.beta2 = optimizer.beta2;
  config.epsilon = optimizer.epsilon;
  return config;
}

}  // namespace ringmaster::trainer
