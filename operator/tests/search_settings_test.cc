// An Experiment's defaults and refusals as a table, and the TrainingJob each trial runs: the
// example's search is accepted as written; every bad spec is refused naming its field, before
// any trial exists.

#include "operator/search_settings.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/yaml_documents.h"

namespace ringmaster::op {
namespace {

using nlohmann::json;

json exampleJson() {
  auto docs = kube::readYamlDocuments(std::string(RM_EXAMPLES_DIR) + "/fashion-mnist-search.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().toString();
  EXPECT_EQ(docs->size(), 1u);
  json doc = (*docs)[0];
  doc["metadata"]["namespace"] = "default";
  doc["metadata"]["uid"] = "exp-uid";
  return doc;
}

kube::Experiment experimentOf(const json& doc) {
  auto decoded = kube::decode<kube::Experiment>(doc);
  EXPECT_TRUE(decoded.ok()) << decoded.status().toString();
  return decoded.ok() ? *decoded : kube::Experiment{};
}

TEST(SearchSettings, TheExampleIsAcceptedWithItsValues) {
  SearchSettings s;
  const std::vector<FieldError> errors = validateExperiment(experimentOf(exampleJson()), {}, &s);
  ASSERT_TRUE(errors.empty()) << contract::describe(errors);
  EXPECT_EQ(s.algorithm, SearchAlgorithm::kRandom);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.max_trials, 8);
  EXPECT_EQ(s.parallelism, 4);
  EXPECT_EQ(s.max_failed_trials, 2);
  EXPECT_TRUE(s.maximize);
  ASSERT_EQ(s.space.size(), 2u);
  EXPECT_EQ(s.space[0].scale, search::Scale::kLog);
  EXPECT_EQ(s.space[1].choices.size(), 3u);
}

TEST(SearchSettings, DefaultsAreTheSchemas) {
  json doc = exampleJson();
  doc["spec"].erase("parallelism");
  doc["spec"].erase("maxFailedTrials");
  doc["spec"].erase("seed");
  doc["spec"]["objective"] = {{"metric", "loss"}};
  SearchSettings s;
  ASSERT_TRUE(validateExperiment(experimentOf(doc), {}, &s).empty());
  EXPECT_EQ(s.parallelism, kDefaultSearchParallelism);
  EXPECT_EQ(s.max_failed_trials, kDefaultMaxFailedTrials);
  EXPECT_FALSE(s.maximize) << "a loss is minimized unless the goal says otherwise";
  // The seed comes from the uid: the same Experiment draws the same trials after a restart.
  SearchSettings again;
  ASSERT_TRUE(validateExperiment(experimentOf(doc), {}, &again).empty());
  EXPECT_EQ(s.seed, again.seed);
  doc["metadata"]["uid"] = "another-uid";
  ASSERT_TRUE(validateExperiment(experimentOf(doc), {}, &again).empty());
  EXPECT_NE(s.seed, again.seed);
}

TEST(SearchSettings, AGridRunsItsPointsAtMostMaxTrials) {
  json doc = exampleJson();
  doc["spec"]["algorithm"] = "grid";
  doc["spec"]["parameters"][0]["gridPoints"] = 3;
  doc["spec"].erase("maxTrials");
  SearchSettings s;
  ASSERT_TRUE(validateExperiment(experimentOf(doc), {}, &s).empty());
  EXPECT_EQ(s.max_trials, 9);
  EXPECT_EQ(s.budget().candidates, 9);
  doc["spec"]["maxTrials"] = 4;
  ASSERT_TRUE(validateExperiment(experimentOf(doc), {}, &s).empty());
  EXPECT_EQ(s.max_trials, 4);
}

struct Refusal {
  std::string name;
  std::function<void(json&)> change;
  std::string field;
  std::string says;  // a part of the message
};

TEST(SearchSettings, RefusesBadSpecsNamingTheField) {
  const std::vector<Refusal> cases = {
      {"empty_space", [](json& d) { d["spec"]["parameters"] = json::array(); }, "spec.parameters",
       "at least one"},
      {"not_a_trainer_field",
       [](json& d) { d["spec"]["parameters"][0]["path"] = "optimizer.learningRat"; },
       "spec.parameters[0]", "optimizer.learningRat"},
      {"log_range_through_zero", [](json& d) { d["spec"]["parameters"][0]["min"] = 0; },
       "spec.parameters[0].min", "log"},
      {"range_the_trainer_refuses",
       [](json& d) {
         d["spec"]["parameters"][0] = {
             {"path", "optimizer.learningRate"}, {"min", -0.1}, {"max", 0.1}};
       },
       "spec.parameters[0]", "value -0.1 makes an invalid trial"},
      {"choice_the_trainer_refuses",
       [](json& d) {
         d["spec"]["parameters"][1] = {{"path", "optimizer.type"},
                                       {"choices", json::array({"sgd", "adamw"})}};
       },
       "spec.parameters[1]", "adamw"},
      {"a_value_of_the_wrong_type",
       [](json& d) {
         d["spec"]["parameters"][1] = {{"path", "batchSize"}, {"choices", json::array({"big"})}};
       },
       "spec.parameters[1]", "batchSize"},
      {"parallelism_zero", [](json& d) { d["spec"]["parallelism"] = 0; }, "spec.parallelism",
       "at least 1"},
      {"max_failed_negative", [](json& d) { d["spec"]["maxFailedTrials"] = -1; },
       "spec.maxFailedTrials", "at least 0"},
      {"random_without_max_trials", [](json& d) { d["spec"].erase("maxTrials"); }, "spec.maxTrials",
       "required"},
      {"unknown_algorithm", [](json& d) { d["spec"]["algorithm"] = "bayes"; }, "spec.algorithm",
       "bayes"},
      {"unknown_metric", [](json& d) { d["spec"]["objective"]["metric"] = "f1"; },
       "spec.objective.metric", "f1"},
      {"unknown_scale", [](json& d) { d["spec"]["parameters"][0]["scale"] = "exp"; },
       "spec.parameters[0].scale", "exp"},
      {"grid_range_without_points", [](json& d) { d["spec"]["algorithm"] = "grid"; },
       "spec.parameters[0].gridPoints", "grid"},
      {"grid_too_big",
       [](json& d) {
         d["spec"]["algorithm"] = "grid";
         d["spec"]["parameters"][0]["gridPoints"] = 200;
         d["spec"]["parameters"].push_back(
             {{"path", "optimizer.weightDecay"}, {"min", 0.0}, {"max", 0.01}, {"gridPoints", 100}});
       },
       "spec.parameters", "more than 10000"},
      {"no_template", [](json& d) { d["spec"].erase("trialTemplate"); }, "spec.trialTemplate.spec",
       "required"},
      {"template_refused", [](json& d) { d["spec"]["trialTemplate"]["spec"]["replicas"] = 0; },
       "spec.trialTemplate.spec.replicas", "at least 1"},
      {"a_trainer_field_for_a_program_of_ones_own",
       [](json& d) { d["spec"]["trialTemplate"]["spec"]["command"] = json::array({"python3"}); },
       "spec.parameters[0].path", "env.NAME"},
      {"a_variable_name_that_is_none",
       [](json& d) { d["spec"]["parameters"][0]["path"] = "env.1-LR"; }, "spec.parameters[0].path",
       "variable's name"},
      {"a_variable_the_launcher_sets",
       [](json& d) {
         d["spec"]["parameters"][0] = {{"path", "env.RANK"}, {"choices", {1, 2}}};
       },
       "spec.parameters[0]", "is set by the operator or the launcher"},
      {"unknown_field", [](json& d) { d["spec"]["populationSize"] = 4; }, "spec.populationSize",
       ""},
      {"name_too_long_for_trials", [](json& d) { d["metadata"]["name"] = std::string(50, 'a'); },
       "metadata.name", "trial"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.name);
    json doc = exampleJson();
    c.change(doc);
    SearchSettings s;
    const std::vector<FieldError> errors = validateExperiment(experimentOf(doc), {}, &s);
    bool named = false;
    for (const FieldError& e : errors) {
      named = named || (e.field == c.field && e.message.find(c.says) != std::string::npos);
    }
    EXPECT_TRUE(named) << "want " << c.field << ": ..." << c.says << "...; got "
                       << contract::describe(errors);
    EXPECT_FALSE(searchSettingsOf(experimentOf(doc), {}).ok());
  }
}

TEST(TrialJob, TheTemplateWithTheTrialsValuesOwnedAndLabelled) {
  json doc = exampleJson();
  doc["spec"]["trialTemplate"]["spec"]["trainer"]["checkpoint"] = {{"path", "/ckpt"}};
  const kube::Experiment experiment = experimentOf(doc);
  const SearchSettings s = *searchSettingsOf(experiment, {});
  const search::Assignment values = trialAssignment(s, 5);
  EXPECT_EQ(values, trialAssignment(s, 5)) << "a trial's values are a function of its index";
  EXPECT_NE(values, trialAssignment(s, 6));

  const kube::TrainingJob job = *trialJob(experiment, s, 5);
  EXPECT_EQ(job.metadata.name, "fmnist-search-trial-5");
  EXPECT_EQ(job.metadata.namespace_name, "default");
  EXPECT_EQ(job.metadata.labels.at(kExperimentLabel), "fmnist-search");
  EXPECT_EQ(job.metadata.labels.at(kTrialIndexLabel), "5");
  EXPECT_EQ(trialIndexOf(job.metadata), 5);
  ASSERT_EQ(job.metadata.owner_references.size(), 1u);
  EXPECT_EQ(job.metadata.owner_references[0].kind, "Experiment");
  EXPECT_EQ(job.metadata.owner_references[0].uid, "exp-uid");
  EXPECT_EQ(job.metadata.owner_references[0].controller, true);
  EXPECT_EQ(json::parse(job.metadata.annotations.at(kTrialParametersAnnotation)),
            json({{values[0].first, values[0].second}, {values[1].first, values[1].second}}));
  ASSERT_TRUE(job.spec.trainer && job.spec.trainer->optimizer);
  EXPECT_EQ(json(*job.spec.trainer->optimizer->learning_rate), values[0].second);
  EXPECT_EQ(json(*job.spec.trainer->optimizer->momentum), values[1].second);
  EXPECT_EQ(job.spec.trainer->optimizer->type, "sgd") << "the template's other fields stay";
  EXPECT_EQ(job.spec.trainer->checkpoint->path, "/ckpt/fmnist-search-trial-5")
      << "trials never share a checkpoint";
  EXPECT_TRUE(validate(job).empty()) << contract::describe(validate(job));
}

TEST(TrialJob, AGridsTrialsAreItsPointsInOrder) {
  json doc = exampleJson();
  doc["spec"]["algorithm"] = "grid";
  doc["spec"]["parameters"][0]["gridPoints"] = 2;
  const kube::Experiment experiment = experimentOf(doc);
  const SearchSettings s = *searchSettingsOf(experiment, {});
  std::set<std::string> seen;
  for (int64_t i = 0; i < s.max_trials; ++i) seen.insert(search::describe(trialAssignment(s, i)));
  EXPECT_EQ(seen.size(), 6u) << "every point once";
  EXPECT_EQ(trialAssignment(s, 0)[0].second, 0.002);
  EXPECT_EQ(trialAssignment(s, 0)[1].second, 0.0);
  EXPECT_EQ(trialAssignment(s, 5)[0].second, 0.5);
  EXPECT_EQ(trialAssignment(s, 5)[1].second, 0.9);
}

json torchExampleJson() {
  auto docs = kube::readYamlDocuments(std::string(RM_EXAMPLES_DIR) + "/pytorch-search.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().toString();
  EXPECT_EQ(docs->size(), 2u) << "the program's ConfigMap, then the Experiment";
  json doc = docs->back();
  doc["metadata"]["namespace"] = "default";
  doc["metadata"]["uid"] = "torch-uid";
  return doc;
}

// A program of the user's own takes its values as environment variables: each env.NAME value as
// text (a number as JSON writes it), replacing the template's own NAME; nothing under
// spec.trainer, which such a trial has none of.
TEST(TrialJob, AProgramOfYourOwnTakesItsValuesAsVariables) {
  json doc = torchExampleJson();
  doc["spec"]["trialTemplate"]["spec"]["env"].push_back({{"name", "MOMENTUM"}, {"value", "0.5"}});
  const kube::Experiment experiment = experimentOf(doc);
  core::Result<SearchSettings> s = searchSettingsOf(experiment, {});
  ASSERT_TRUE(s.ok()) << s.status().toString();
  for (int64_t index = 0; index < s->max_trials; ++index) {
    SCOPED_TRACE(index);
    const search::Assignment values = trialAssignment(*s, index);
    ASSERT_EQ(values.size(), 2u);
    const kube::TrainingJob job = *trialJob(experiment, *s, index);
    EXPECT_FALSE(job.spec.trainer.has_value());
    EXPECT_EQ(job.spec.command, (std::vector<std::string>{"python3", "/app/train.py"}));
    std::map<std::string, std::string> env;
    for (const kube::EnvVar& var : job.spec.env) {
      EXPECT_TRUE(env.emplace(var.name, var.value.value_or("")).second) << var.name << " twice";
    }
    EXPECT_EQ(env["OMP_NUM_THREADS"], "1") << "the template's own variables stay";
    EXPECT_EQ(env["EPOCHS"], "1");
    EXPECT_EQ(std::stod(env["LEARNING_RATE"]), values[0].second.get<double>())
        << "the value's text reads back as the same double";
    EXPECT_EQ(env["MOMENTUM"], values[1].second.dump()) << "the trial's value, not the template's";
    EXPECT_EQ(json::parse(job.metadata.annotations.at(kTrialParametersAnnotation)),
              json({{"env.LEARNING_RATE", values[0].second}, {"env.MOMENTUM", values[1].second}}));
    EXPECT_TRUE(validate(job).empty()) << contract::describe(validate(job));
  }
  // pbt over a program of one's own: the launcher runs it `intervals` times, so it must say how
  // many; each member's job then carries its population with the variables to explore.
  doc["spec"]["algorithm"] = "pbt";
  doc["spec"].erase("maxTrials");
  doc["spec"]["pbt"] = {{"directory", "/app"}};
  bool named = false;
  int on_intervals = 0;
  for (const FieldError& e : validateExperiment(experimentOf(doc), {}, nullptr)) {
    named = named || (e.field == "spec.pbt.intervals" &&
                      e.message.find("program of your own") != std::string::npos);
    on_intervals += e.field == "spec.pbt.intervals" ? 1 : 0;
  }
  EXPECT_TRUE(named);
  EXPECT_EQ(on_intervals, 1) << "said once";
  doc["spec"]["pbt"]["intervals"] = 3;
  const kube::Experiment pbt = experimentOf(doc);
  core::Result<SearchSettings> member_settings = searchSettingsOf(pbt, {});
  ASSERT_TRUE(member_settings.ok()) << member_settings.status().toString();
  const kube::TrainingJob member = *trialJob(pbt, *member_settings, 1);
  ASSERT_TRUE(member.spec.trainer && member.spec.trainer->pbt);
  EXPECT_EQ(member.spec.trainer->pbt->intervals, 3);
  EXPECT_EQ(member.spec.trainer->pbt->member, "torch-search-trial-1");
  EXPECT_EQ(member.spec.trainer->pbt->parameters[0].path, "env.LEARNING_RATE");
  EXPECT_TRUE(validate(member).empty()) << contract::describe(validate(member));
  // A trainer field in such a member's space is refused, naming the Experiment's parameter.
  doc["spec"]["parameters"][1]["path"] = "optimizer.momentum";
  named = false;
  for (const FieldError& e : validateExperiment(experimentOf(doc), {}, nullptr))
    named = named || e.field == "spec.parameters[1].path";
  EXPECT_TRUE(named);
}

json pbtExampleJson() {
  auto docs = kube::readYamlDocuments(std::string(RM_EXAMPLES_DIR) + "/fashion-mnist-pbt.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().toString();
  json doc = (*docs)[0];
  doc["metadata"]["namespace"] = "default";
  doc["metadata"]["uid"] = "pbt-uid";
  return doc;
}

TEST(SearchSettings, APbtPopulationIsItsParallelismAndEachMemberKnowsIt) {
  const kube::Experiment experiment = experimentOf(pbtExampleJson());
  SearchSettings s;
  const std::vector<FieldError> errors = validateExperiment(experiment, {}, &s);
  ASSERT_TRUE(errors.empty()) << contract::describe(errors);
  EXPECT_EQ(s.algorithm, SearchAlgorithm::kPbt);
  EXPECT_EQ(s.max_trials, 4);
  EXPECT_EQ(s.budget().parallelism, 4);

  const kube::TrainingJob member = *trialJob(experiment, s, 2);
  ASSERT_TRUE(member.spec.trainer && member.spec.trainer->pbt);
  const kube::PbtSpec& pbt = *member.spec.trainer->pbt;
  EXPECT_EQ(pbt.member, "fmnist-pbt-trial-2");
  EXPECT_EQ(pbt.population, (std::vector<std::string>{"fmnist-pbt-trial-0", "fmnist-pbt-trial-1",
                                                      "fmnist-pbt-trial-2", "fmnist-pbt-trial-3"}));
  EXPECT_EQ(pbt.directory, "/pbt/pbt-uid") << "a directory per Experiment object";
  EXPECT_EQ(pbt.parameters, experiment.spec.parameters);
  EXPECT_EQ(pbt.seed, 3);
  EXPECT_EQ(pbt.quantile, 0.25);
  EXPECT_EQ(pbt.wait_seconds, 120);
  EXPECT_EQ(pbt.metric, "testAccuracy");
  EXPECT_EQ(pbt.goal, "maximize");
  // Its first values are its own random draw, and the trainer takes the member as valid.
  EXPECT_EQ(json(*member.spec.trainer->optimizer->learning_rate), trialAssignment(s, 2)[0].second);
  EXPECT_TRUE(validate(member).empty()) << contract::describe(validate(member));
}

TEST(SearchSettings, RefusesBadPbtSearchesNamingTheField) {
  const std::vector<Refusal> cases = {
      {"no_population_spec", [](json& d) { d["spec"].erase("pbt"); }, "spec.pbt", "required"},
      {"a_relative_directory", [](json& d) { d["spec"]["pbt"]["directory"] = "pbt"; },
       "spec.pbt.directory", "absolute"},
      {"a_directory_no_trial_mounts", [](json& d) { d["spec"]["pbt"]["directory"] = "/elsewhere"; },
       "spec.pbt.directory", "volumeMounts"},
      {"a_mount_that_only_shares_a_prefix",
       [](json& d) { d["spec"]["pbt"]["directory"] = "/pbtx"; }, "spec.pbt.directory",
       "volumeMounts"},
      {"exploring_the_model",
       [](json& d) {
         d["spec"]["parameters"][1] = {
             {"path", "model.hidden"},
             {"choices", json::array({json::array({64}), json::array({128})})}};
       },
       "spec.parameters[1].path", "optimizer fields"},
      {"members_of_two_ranks", [](json& d) { d["spec"]["trialTemplate"]["spec"]["replicas"] = 2; },
       "spec.trialTemplate.spec.replicas", "one rank"},
      {"max_trials_beyond_the_population", [](json& d) { d["spec"]["maxTrials"] = 8; },
       "spec.maxTrials", "equal parallelism"},
      {"a_population_of_one", [](json& d) { d["spec"]["parallelism"] = 1; }, "spec.parallelism",
       "at least 2"},
      {"one_epoch", [](json& d) { d["spec"]["trialTemplate"]["spec"]["trainer"]["epochs"] = 1; },
       "spec.trialTemplate.spec.trainer.pbt", "at least 2 epochs"},
      {"a_quantile_past_a_half", [](json& d) { d["spec"]["pbt"]["quantile"] = 0.7; },
       "spec.pbt.quantile", "0.5"},
      {"intervals_for_the_built_in_trainer", [](json& d) { d["spec"]["pbt"]["intervals"] = 3; },
       "spec.pbt.intervals", "only for a program of your own"},
      {"population_settings_on_a_random_search",
       [](json& d) {
         d["spec"]["algorithm"] = "random";
         d["spec"]["maxTrials"] = 4;
       },
       "spec.pbt", "only for algorithm pbt"},
  };
  for (const Refusal& c : cases) {
    SCOPED_TRACE(c.name);
    json doc = pbtExampleJson();
    c.change(doc);
    const std::vector<FieldError> errors = validateExperiment(experimentOf(doc), {}, nullptr);
    bool named = false;
    for (const FieldError& e : errors) {
      named = named || (e.field == c.field && e.message.find(c.says) != std::string::npos);
    }
    EXPECT_TRUE(named) << "want " << c.field << ": ..." << c.says << "...; got "
                       << contract::describe(errors);
  }
}

TEST(TrialIndex, OnlyAWholeNumberLabel) {
  kube::ObjectMeta meta;
  EXPECT_EQ(trialIndexOf(meta), std::nullopt);
  for (const char* bad : {"", "-1", "3x", "x"}) {
    meta.labels[kTrialIndexLabel] = bad;
    EXPECT_EQ(trialIndexOf(meta), std::nullopt) << bad;
  }
  meta.labels[kTrialIndexLabel] = "12";
  EXPECT_EQ(trialIndexOf(meta), 12);
}

}  // namespace
}  // namespace ringmaster::op
