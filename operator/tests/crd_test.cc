// Checks crds/trainingjob.yaml against what the operator and kubectl rely on: a structural schema
// with a description on every field, the printer columns, names, and the same fields as lib/kube's
// TrainingJob type (a field the CRD declares but the type drops would be lost on status writes).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <set>

#include "operator/status.h"
#include "operator/validate.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/training_job.h"

namespace ringmaster::op {
namespace {

YAML::Node loadCrd() { return YAML::LoadFile(RM_CRD_PATH); }

YAML::Node version(const YAML::Node& crd) { return crd["spec"]["versions"][0]; }

TEST(Crd, NamesGroupAndStatusSubresource) {
  YAML::Node crd = loadCrd();
  EXPECT_EQ(crd["metadata"]["name"].as<std::string>(), "trainingjobs.ringmaster.dev");
  EXPECT_EQ(crd["spec"]["group"].as<std::string>(), "ringmaster.dev");
  EXPECT_EQ(crd["spec"]["names"]["kind"].as<std::string>(), "TrainingJob");
  EXPECT_EQ(crd["spec"]["names"]["shortNames"][0].as<std::string>(), "tj");
  EXPECT_EQ(crd["spec"]["names"]["categories"][0].as<std::string>(), "ringmaster");
  EXPECT_EQ(version(crd)["name"].as<std::string>(), "v1alpha1");
  EXPECT_TRUE(version(crd)["subresources"]["status"].IsMap());
}

// kubectl scale and autoscalers: the counts and the selector the operator writes.
TEST(Crd, TheScaleSubresourceReadsWhatTheOperatorWrites) {
  const YAML::Node scale = version(loadCrd())["subresources"]["scale"];
  ASSERT_TRUE(scale.IsMap());
  EXPECT_EQ(scale["specReplicasPath"].as<std::string>(), ".spec.replicas");
  EXPECT_EQ(scale["statusReplicasPath"].as<std::string>(), ".status.currentReplicas");
  EXPECT_EQ(scale["labelSelectorPath"].as<std::string>(), ".status.selector");
  kube::TrainingJobStatus status;
  status.current_replicas = 2;
  status.selector = "ringmaster.dev/job-name=j";
  const nlohmann::json written = kube::encode(status);
  EXPECT_EQ(written["currentReplicas"], 2);
  EXPECT_EQ(written["selector"], "ringmaster.dev/job-name=j");
}

TEST(Crd, PrinterColumnsTellTheStory) {
  std::vector<std::string> names;
  for (const auto& c : version(loadCrd())["additionalPrinterColumns"]) {
    if (!c["priority"]) names.push_back(c["name"].as<std::string>());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Phase", "Reason", "World", "Epoch", "Loss",
                                             "Samples/s", "Restarts", "Age"}));
}

TEST(Crd, EveryFieldHasADescriptionAndAType) {
  std::vector<std::string> missing;
  std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& n,
                                                                        const std::string& path) {
    if (path != "metadata" && path.find("metadata") != 0) {
      if (!n["description"]) missing.push_back(path + " (description)");
    }
    if (!n["type"] && !n["x-kubernetes-int-or-string"]) missing.push_back(path + " (type)");
    if (n["properties"]) {
      for (const auto& p : n["properties"]) {
        walk(p.second, (path.empty() ? "" : path + ".") + p.first.as<std::string>());
      }
    }
    if (n["items"] && n["items"]["properties"]) walk(n["items"], path + "[]");
  };
  YAML::Node root = version(loadCrd())["schema"]["openAPIV3Schema"];
  for (const auto& p : root["properties"]) {
    walk(p.second, p.first.as<std::string>());
  }
  EXPECT_TRUE(missing.empty()) << ::testing::PrintToString(missing);
}

// Every property the CRD declares under `schema` survives a decode/encode through `T` typed
// (not only through `extra`): a typed field exists for it.
template <class T>
void expectTyped(const YAML::Node& schema, const std::string& path) {
  nlohmann::json probe = nlohmann::json::object();
  for (const auto& p : schema["properties"]) {
    const std::string key = p.first.as<std::string>();
    const std::string type = p.second["type"] ? p.second["type"].as<std::string>() : "";
    nlohmann::json value = type == "string"    ? nlohmann::json("x")
                           : type == "integer" ? nlohmann::json(1)
                           : type == "number"  ? nlohmann::json(1.5)
                           : type == "boolean" ? nlohmann::json(true)
                           : type == "array"   ? nlohmann::json::array()
                                               : nlohmann::json::object();
    if (p.second["format"] && p.second["format"].as<std::string>() == "date-time") {
      value = "2026-11-22T10:00:00Z";
    }
    probe[key] = value;
  }
  core::Result<T> decoded = kube::decode<T>(probe);
  ASSERT_TRUE(decoded.ok()) << path << ": " << decoded.status().toString();
  EXPECT_TRUE(decoded->extra.empty()) << path << ": not typed: " << decoded->extra.dump();
}

TEST(Crd, MatchesTheTypedTrainingJob) {
  YAML::Node schema = version(loadCrd())["schema"]["openAPIV3Schema"];
  YAML::Node spec = schema["properties"]["spec"];
  expectTyped<kube::TrainingJobSpec>(spec, "spec");
  expectTyped<kube::TrainerSpec>(spec["properties"]["trainer"], "spec.trainer");
  expectTyped<kube::ModelSpec>(spec["properties"]["trainer"]["properties"]["model"],
                               "spec.trainer.model");
  expectTyped<kube::OptimizerSpec>(spec["properties"]["trainer"]["properties"]["optimizer"],
                                   "spec.trainer.optimizer");
  expectTyped<kube::CheckpointSpec>(spec["properties"]["trainer"]["properties"]["checkpoint"],
                                    "spec.trainer.checkpoint");
  YAML::Node parallelism = spec["properties"]["trainer"]["properties"]["parallelism"];
  expectTyped<kube::ParallelismSpec>(parallelism, "spec.trainer.parallelism");
  expectTyped<kube::PipelineSpec>(parallelism["properties"]["pipeline"],
                                  "spec.trainer.parallelism.pipeline");
  expectTyped<kube::SchedulingPolicy>(spec["properties"]["schedulingPolicy"],
                                      "spec.schedulingPolicy");
  // The template's pod fields beyond the typed ones (dnsPolicy, runtimeClassName, ...) pass
  // through kube::PodSpec's `extra`, as the operator copies them.
  expectTyped<kube::PodTemplateSpec>(spec["properties"]["template"], "spec.template");
  expectTyped<kube::Toleration>(
      spec["properties"]["template"]["properties"]["spec"]["properties"]["tolerations"]["items"],
      "spec.template.spec.tolerations[]");
  YAML::Node status = schema["properties"]["status"];
  expectTyped<kube::TrainingJobStatus>(status, "status");
  expectTyped<kube::ReplicaStatus>(status["properties"]["replicas"], "status.replicas");
  expectTyped<kube::TrainingProgress>(status["properties"]["progress"], "status.progress");
}

// status.conditions are meta/v1 Conditions: every field required, with its bounds and patterns.
TEST(Crd, ConditionsAreMetaV1Conditions) {
  YAML::Node item = version(loadCrd())["schema"]["openAPIV3Schema"]["properties"]["status"]
                                      ["properties"]["conditions"]["items"];
  std::set<std::string> required;
  for (const auto& r : item["required"]) required.insert(r.as<std::string>());
  EXPECT_EQ(required, (std::set<std::string>{"type", "status", "reason", "message",
                                             "lastTransitionTime", "observedGeneration"}));
  EXPECT_EQ(item["properties"]["reason"]["maxLength"].as<size_t>(), kMaxConditionReason);
  EXPECT_EQ(item["properties"]["message"]["maxLength"].as<size_t>(), kMaxConditionMessage);
  EXPECT_TRUE(item["properties"]["reason"]["pattern"]);
  EXPECT_TRUE(item["properties"]["type"]["pattern"]);
}

TEST(Crd, CrossFieldRulesCoverPodNameLengthAndImmutableWorldSize) {
  YAML::Node schema = version(loadCrd())["schema"]["openAPIV3Schema"];
  std::string rules;
  for (const auto& r : schema["x-kubernetes-validations"]) rules += r["rule"].as<std::string>();
  for (const auto& r : schema["properties"]["spec"]["x-kubernetes-validations"]) {
    rules += r["rule"].as<std::string>();
  }
  EXPECT_NE(rules.find("'-worker-'"), std::string::npos);
  EXPECT_NE(rules.find("oldSelf.replicas"), std::string::npos);
  // An elastic job's pods are named up to maxReplicas - 1, and its bounds hold around replicas.
  EXPECT_NE(rules.find("self.spec.elastic.maxReplicas"), std::string::npos);
  EXPECT_NE(rules.find("self.elastic.minReplicas <= self.replicas"), std::string::npos);
  EXPECT_NE(rules.find("oldSelf.elastic"), std::string::npos);
}

// An integer the CEL rules compute with, or one that sizes what a rank allocates, is bounded by
// the schema itself (format int32, minimum and maximum): `replicas: 1e20` then gets the
// schema's "less than or equal to 4096", not an error from inside a CEL rule.
TEST(Crd, IntegersThatSizeTheJobAreBoundedInt32) {
  YAML::Node spec = version(loadCrd())["schema"]["openAPIV3Schema"]["properties"]["spec"];
  YAML::Node trainer = spec["properties"]["trainer"]["properties"];
  YAML::Node model = trainer["model"]["properties"];
  const std::vector<std::pair<std::string, YAML::Node>> fields = {
      {"spec.replicas", spec["properties"]["replicas"]},
      {"spec.procsPerReplica", spec["properties"]["procsPerReplica"]},
      {"spec.elastic.minReplicas", spec["properties"]["elastic"]["properties"]["minReplicas"]},
      {"spec.elastic.maxReplicas", spec["properties"]["elastic"]["properties"]["maxReplicas"]},
      {"spec.trainer.model.hidden[]", model["hidden"]["items"]},
      {"spec.trainer.model.channels[]", model["channels"]["items"]},
      {"spec.trainer.model.cnnHidden", model["cnnHidden"]},
      {"spec.trainer.batchSize", trainer["batchSize"]},
      {"spec.trainer.parallelism.pipeline.stages",
       trainer["parallelism"]["properties"]["pipeline"]["properties"]["stages"]},
      {"spec.trainer.parallelism.pipeline.microBatches",
       trainer["parallelism"]["properties"]["pipeline"]["properties"]["microBatches"]},
  };
  for (const auto& [path, node] : fields) {
    ASSERT_TRUE(node.IsMap()) << path;
    EXPECT_EQ(node["format"].as<std::string>(""), "int32") << path;
    EXPECT_TRUE(node["minimum"].IsDefined()) << path << " has no minimum";
    EXPECT_TRUE(node["maximum"].IsDefined()) << path << " has no maximum";
  }
  EXPECT_EQ(spec["properties"]["replicas"]["maximum"].as<int>(), kMaxWorldSize);
}

// YAML (as kubectl would send it) to JSON; scalars that read as numbers or booleans become them.
nlohmann::json toJson(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& kv : node) out[kv.first.as<std::string>()] = toJson(kv.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(toJson(item));
    return out;
  }
  if (node.IsNull()) return nullptr;
  const std::string text = node.Scalar();
  if (node.Tag() != "!") {  // plain (unquoted) scalar
    if (text == "true" || text == "false") return text == "true";
    int64_t i = 0;
    double d = 0;
    if (YAML::convert<int64_t>::decode(node, i)) return i;
    if (YAML::convert<double>::decode(node, d)) return d;
  }
  return text;
}

TEST(Examples, EveryExampleJobIsValidAndFullyTyped) {
  for (const std::string file :
       {"fashion-mnist-mlp.yaml", "fashion-mnist-mlp-gpu.yaml", "fashion-mnist-mlp-1gpu.yaml",
        "fashion-mnist-pipeline.yaml", "fashion-mnist-tensor.yaml",
        "cluster-fashion-mnist-mlp.yaml", "cluster-fashion-mnist-elastic.yaml"}) {
    SCOPED_TRACE(file);
    // The cluster examples leave spec.image to the operator's default (the chart's trainerImage).
    ValidateOptions options;
    if (file.rfind("cluster-", 0) == 0) options.default_image = "ringmaster/trainer:0.1.0";
    YAML::Node yaml = YAML::LoadFile(std::string(RM_EXAMPLES_DIR) + "/" + file);
    core::Result<kube::TrainingJob> job = kube::decode<kube::TrainingJob>(toJson(yaml));
    ASSERT_TRUE(job.ok()) << job.status().toString();
    EXPECT_TRUE(job->spec.extra.empty()) << job->spec.extra.dump();
    ASSERT_TRUE(job->spec.trainer.has_value());
    EXPECT_TRUE(job->spec.trainer->extra.empty()) << job->spec.trainer->extra.dump();
    core::Result<kube::TrainingJobSpec> spec = defaultAndValidate(*job, options);
    EXPECT_TRUE(spec.ok()) << spec.status().toString();
  }
}

// One constraint the CRD's schema puts on a field under spec: an enum, numeric bounds, or the
// most items of an array.
struct SchemaConstraint {
  std::string field;                   // as the validator names it: "spec.trainer.model.hidden[0]"
  nlohmann::json::json_pointer where;  // the same place in the job's JSON
  YAML::Node schema;
};

void collectConstraints(const YAML::Node& schema, const std::string& field,
                        const nlohmann::json::json_pointer& where,
                        std::vector<SchemaConstraint>& out) {
  if (schema["enum"] || schema["minimum"] || schema["maximum"] || schema["maxItems"]) {
    out.push_back({field, where, schema});
  }
  for (const auto& kv : schema["properties"]) {
    const std::string key = kv.first.as<std::string>();
    collectConstraints(kv.second, field + "." + key, where / key, out);
  }
  if (schema["items"]) collectConstraints(schema["items"], field + "[0]", where / 0, out);
}

// The validator's complaints about exactly `c.field` when `base` (a job) has `value` there.
std::vector<std::string> complaintsAbout(const nlohmann::json& base, const SchemaConstraint& c,
                                         const nlohmann::json& value) {
  nlohmann::json job = base;
  job[c.where] = value;
  core::Result<kube::TrainingJob> decoded = kube::decode<kube::TrainingJob>(job);
  if (!decoded.ok()) return {"does not decode: " + decoded.status().message()};
  std::vector<std::string> out;
  for (const FieldError& e : validate(*decoded)) {
    if (e.field == c.field) out.push_back(e.message);
  }
  return out;
}

// Every enum, numeric bound and maxItems the CRD declares under spec, the operator's validator
// enforces the same way: a value the API server admits is never Failed by the operator for that
// field, and a value the schema refuses is refused by the validator too (for a server that skipped
// the schema, or a job stored before it changed).
TEST(Crd, SchemaAndValidatorAgreeOnEveryBoundAndEnum) {
  YAML::Node spec = version(loadCrd())["schema"]["openAPIV3Schema"]["properties"]["spec"];
  std::vector<SchemaConstraint> constraints;
  collectConstraints(spec, "spec", nlohmann::json::json_pointer("/spec"), constraints);
  ASSERT_GT(constraints.size(), 10u);
  const nlohmann::json example =
      toJson(YAML::LoadFile(std::string(RM_EXAMPLES_DIR) + "/fashion-mnist-mlp.yaml"));
  // A field that only a program of one's own may set is probed on such a job.
  nlohmann::json own_program = example;
  own_program["spec"]["command"] = {"python3", "train.py"};
  auto complaints = [&](const SchemaConstraint& c, const nlohmann::json& value) {
    return complaintsAbout(c.field == "spec.trainer.pbt.intervals" ? own_program : example, c,
                           value);
  };
  for (const SchemaConstraint& c : constraints) {
    SCOPED_TRACE(c.field);
    if (c.schema["enum"]) {
      for (const auto& allowed : c.schema["enum"]) {
        EXPECT_THAT(complaints(c, allowed.as<std::string>()), ::testing::IsEmpty())
            << "the schema allows \"" << allowed.as<std::string>() << "\"";
      }
      EXPECT_THAT(complaints(c, "not-in-the-enum"), ::testing::Not(::testing::IsEmpty()));
      continue;
    }
    if (c.schema["maxItems"]) {
      const size_t max = c.schema["maxItems"].as<size_t>();
      const size_t min = c.schema["minItems"].as<size_t>(0);
      // Items as the schema's example would give them: numbers, or objects the validator
      // may find other faults in (those are about other fields).
      const bool numbers = c.schema["items"]["type"].as<std::string>("") == "integer";
      auto items = [&](size_t n) {
        nlohmann::json a = nlohmann::json::array();
        for (size_t i = 0; i < n; ++i) {
          a.push_back(numbers ? nlohmann::json(16) : nlohmann::json::object());
        }
        return a;
      };
      EXPECT_THAT(complaints(c, items(std::max(max, min))), ::testing::IsEmpty())
          << "the schema's maxItems " << max;
      EXPECT_THAT(complaints(c, items(max + 1)), ::testing::Not(::testing::IsEmpty()))
          << "above the schema's maxItems " << max;
      continue;
    }
    const bool integer = c.schema["type"].as<std::string>("") == "integer";
    const double step = integer ? 1 : 1e-6;
    auto number = [&](double v) {
      return integer ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v);
    };
    if (c.schema["minimum"]) {
      const double min = c.schema["minimum"].as<double>();
      const bool exclusive = c.schema["exclusiveMinimum"].as<bool>(false);
      EXPECT_THAT(complaints(c, number(exclusive ? min + step : min)), ::testing::IsEmpty())
          << "the schema's minimum " << min;
      EXPECT_THAT(complaints(c, number(exclusive ? min : min - step)),
                  ::testing::Not(::testing::IsEmpty()))
          << "below the schema's minimum " << min;
    }
    if (c.schema["maximum"]) {
      const double max = c.schema["maximum"].as<double>();
      const bool exclusive = c.schema["exclusiveMaximum"].as<bool>(false);
      EXPECT_THAT(complaints(c, number(exclusive ? max - step : max)), ::testing::IsEmpty())
          << "the schema's maximum " << max;
      EXPECT_THAT(complaints(c, number(exclusive ? max : max + step)),
                  ::testing::Not(::testing::IsEmpty()))
          << "above the schema's maximum " << max;
    }
  }
}

TEST(Examples, TheGpuExampleAsksForAGpuAndBf16) {
  YAML::Node yaml = YAML::LoadFile(std::string(RM_EXAMPLES_DIR) + "/fashion-mnist-mlp-gpu.yaml");
  core::Result<kube::TrainingJob> job = kube::decode<kube::TrainingJob>(toJson(yaml));
  ASSERT_TRUE(job.ok()) << job.status().toString();
  EXPECT_EQ(job->spec.trainer->precision, "bf16");
  EXPECT_EQ(job->spec.trainer->device, "auto");
  EXPECT_EQ(job->spec.replicas, 4);
  EXPECT_EQ(job->spec.resources->limits.at("nvidia.com/gpu").toString(), "1");
  // GPU nodes' usual taint, tolerated.
  ASSERT_TRUE(job->spec.pod_template.has_value());
  ASSERT_EQ(job->spec.pod_template->spec.tolerations.size(), 1u);
  EXPECT_EQ(job->spec.pod_template->spec.tolerations[0].key, "nvidia.com/gpu");
}

}  // namespace
}  // namespace ringmaster::op
