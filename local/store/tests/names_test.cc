// Object names on create: which kind follows which rule (nameRuleFor), the rules with
// kube-apiserver's texts (nameProblems), and the store answering 422 before anything exists.
#include "local/store/names.h"

#include <gtest/gtest.h>

#include <optional>

#include "local/store/object_store.h"
#include "local/store/tests/test_types.h"

namespace ringmaster::local {
namespace {

using nlohmann::json;

const std::string kSubdomainError =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const std::string kLabelError =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const std::string kDns1035Error =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

struct RuleCase {
  ResourceKey key;
  NameRule rule;
};

TEST(Names, EachKindHasItsKubernetesRule) {
  const std::vector<RuleCase> cases = {
      {{"", "namespaces"}, NameRule::kDns1123Label},
      {{"", "services"}, NameRule::kDns1035Label},
      {{"", "pods"}, NameRule::kDns1123Subdomain},
      {{"", "configmaps"}, NameRule::kDns1123Subdomain},
      {{"", "secrets"}, NameRule::kDns1123Subdomain},
      {{"", "serviceaccounts"}, NameRule::kDns1123Subdomain},
      {{"", "events"}, NameRule::kDns1123Subdomain},
      {{"", "nodes"}, NameRule::kDns1123Subdomain},
      {{"coordination.k8s.io", "leases"}, NameRule::kDns1123Subdomain},
      {{"apiextensions.k8s.io", "customresourcedefinitions"}, NameRule::kDns1123Subdomain},
      {{"ringmaster.dev", "trainingjobs"}, NameRule::kDns1123Subdomain},
      {{"example.dev", "services"}, NameRule::kDns1123Subdomain},  // only core services
  };
  for (const RuleCase& c : cases) {
    EXPECT_EQ(nameRuleFor(c.key), c.rule) << c.key.qualified();
  }
}

struct NameCase {
  NameRule rule;
  std::string name;
  bool prefix;
  std::vector<std::string> problems;
};

TEST(Names, ProblemsInKubeApiserversWords) {
  using R = NameRule;
  const std::string long_label(64, 'a');
  const std::vector<NameCase> cases = {
      {R::kDns1123Subdomain, "worker-0", false, {}},
      {R::kDns1123Subdomain, "job.worker-0.a1", false, {}},
      {R::kDns1123Subdomain, "0", false, {}},
      {R::kDns1123Subdomain, std::string(253, 'a'), false, {}},
      {R::kDns1123Subdomain, std::string(254, 'a'), false, {"must be no more than 253 characters"}},
      {R::kDns1123Subdomain, "", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "../../tmp/x", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "..", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "a b;c", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "Bad_Name", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "a..b", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "a.-b", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "-a", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "a/b", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "job-", false, {kSubdomainError}},
      {R::kDns1123Subdomain, "job-", true, {}},
      {R::kDns1123Subdomain, "Job-", true, {kSubdomainError}},
      {R::kDns1123Label, "kube-system", false, {}},
      {R::kDns1123Label, "1st", false, {}},
      {R::kDns1123Label, "a.b", false, {kLabelError}},
      {R::kDns1123Label, "..", false, {kLabelError}},
      {R::kDns1123Label, long_label, false, {"must be no more than 63 characters"}},
      {R::kDns1123Label,
       std::string(64, '_'),
       false,
       {"must be no more than 63 characters", kLabelError}},
      {R::kDns1035Label, "my-svc", false, {}},
      {R::kDns1035Label, "1abc", false, {kDns1035Error}},
      {R::kDns1035Label, "svc-", true, {}},
      {R::kDns1035Label, "a.b", false, {kDns1035Error}},
  };
  for (const NameCase& c : cases) {
    EXPECT_EQ(nameProblems(c.rule, c.name, c.prefix), c.problems)
        << c.name << (c.prefix ? " (prefix)" : "");
  }
}

ResourceType services() {
  ResourceType t = testing::configMaps();
  t.resource = "services";
  t.kind = "Service";
  return t;
}

class NamesStoreTest : public ::testing::Test {
 protected:
  NamesStoreTest() {
    ObjectStoreOptions o;
    o.random_seed = 42;
    store_ = std::make_unique<ObjectStore>(o);
    store_->registerType(testing::configMaps());
    store_->registerType(testing::pods());
    store_->registerType(testing::trainingJobs());
    store_->registerType(testing::namespaces());
    store_->registerType(services());
    EXPECT_TRUE(store_->create(testing::kNs, "", object("Namespace", "default")).ok());
  }
  static json object(const std::string& kind, const std::string& name) {
    return {{"apiVersion", "v1"}, {"kind", kind}, {"metadata", {{"name", name}}}};
  }
  // The 422 create answers for `name`, or nullopt when it was created.
  std::optional<StatusError> createError(const ResourceKey& key, const std::string& kind,
                                         const std::string& name,
                                         const std::string& ns = "default") {
    json obj = object(kind, name);
    if (key == testing::kTj) obj["apiVersion"] = "ringmaster.dev/v1alpha1";
    auto r = store_->create(key, ns, obj);
    if (r.ok()) return std::nullopt;
    return r.error();
  }
  std::unique_ptr<ObjectStore> store_;
};

TEST_F(NamesStoreTest, BadConfigMapNameIs422ExactlyAsKubeApiserver) {
  auto e = createError(testing::kCm, "ConfigMap", "Bad_Name");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code(), 422);
  // The body kube-apiserver v1.26 sends for `kubectl create configmap Bad_Name`.
  const std::string cause = "Invalid value: \"Bad_Name\": " + kSubdomainError;
  EXPECT_EQ(e->bodyText(),
            nlohmann::ordered_json(
                {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"metadata", nlohmann::ordered_json::object()},
                 {"status", "Failure"},
                 {"message", "ConfigMap \"Bad_Name\" is invalid: metadata.name: " + cause},
                 {"reason", "Invalid"},
                 {"details",
                  {{"name", "Bad_Name"},
                   {"kind", "ConfigMap"},
                   {"causes",
                    {{{"reason", "FieldValueInvalid"},
                      {"message", cause},
                      {"field", "metadata.name"}}}}}},
                 {"code", 422}})
                .dump());
}

TEST_F(NamesStoreTest, PodNamesThatAreNoSubdomainAreRefusedAndNothingIsStored) {
  for (const std::string name : {"../../tmp/x", "a b;c", "..", "x/y", "Bad_Name"}) {
    auto e = createError(testing::kPods, "Pod", name);
    ASSERT_TRUE(e) << name << " was created";
    EXPECT_EQ(e->code(), 422) << name;
    ASSERT_EQ(e->causes().size(), 1u) << name;
    EXPECT_EQ(e->causes()[0].field, "metadata.name");
    EXPECT_EQ(e->causes()[0].message,
              "Invalid value: " + json(name).dump() + ": " + kSubdomainError);
  }
  auto list = store_->list(testing::kPods, "", {});
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->items.empty());
  EXPECT_FALSE(createError(testing::kPods, "Pod", "job-worker-0.a"));
}

TEST_F(NamesStoreTest, NamespacesAreLabelsServicesDns1035CustomResourcesSubdomains) {
  auto ns = createError(testing::kNs, "Namespace", "a.b", "");
  ASSERT_TRUE(ns);
  EXPECT_EQ(ns->message(),
            "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": " + kLabelError);
  auto svc = createError({"", "services"}, "Service", "1abc");
  ASSERT_TRUE(svc);
  EXPECT_EQ(
      svc->message(),
      "Service \"1abc\" is invalid: metadata.name: Invalid value: \"1abc\": " + kDns1035Error);
  auto tj = createError(testing::kTj, "TrainingJob", "../x");
  ASSERT_TRUE(tj);
  EXPECT_EQ(tj->message(),
            "TrainingJob.ringmaster.dev \"../x\" is invalid: metadata.name: Invalid value: "
            "\"../x\": " +
                kSubdomainError);
  EXPECT_FALSE(createError(testing::kNs, "Namespace", "team-1", ""));
  EXPECT_FALSE(createError({"", "services"}, "Service", "job-0"));
  EXPECT_FALSE(createError(testing::kTj, "TrainingJob", "fmnist.v2"));
}

TEST_F(NamesStoreTest, BadGenerateNameReportsBothFieldsAsKubeApiserver) {
  json obj = object("ConfigMap", "");
  obj["metadata"].erase("name");
  obj["metadata"]["generateName"] = "Bad-";
  auto r = store_->create(testing::kCm, "default", obj);
  ASSERT_FALSE(r.ok());
  const auto& causes = r.error().causes();
  ASSERT_EQ(causes.size(), 2u) << r.error().bodyText();
  EXPECT_EQ(causes[0].field, "metadata.generateName");
  EXPECT_EQ(causes[0].message, "Invalid value: \"Bad-\": " + kSubdomainError);
  EXPECT_EQ(causes[1].field, "metadata.name");
  EXPECT_EQ(causes[1].message.rfind("Invalid value: \"Bad-", 0), 0u) << causes[1].message;
  EXPECT_EQ(r.error().message().rfind("ConfigMap \"Bad-", 0), 0u);
  EXPECT_NE(r.error().message().find("is invalid: [metadata.generateName: "), std::string::npos);
  obj["metadata"]["generateName"] = "good-";
  EXPECT_TRUE(store_->create(testing::kCm, "default", obj).ok());
}

TEST(NamesStore, NamespaceOfANamespacedObjectMustBeALabel) {
  // Without a namespaces type the store cannot look the namespace up: its name is still checked.
  ObjectStore store;
  store.registerType(testing::configMaps());
  auto r =
      store.create(testing::kCm, "../x",
                   {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "a"}}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), 422);
  ASSERT_EQ(r.error().causes().size(), 1u);
  EXPECT_EQ(r.error().causes()[0].field, "metadata.namespace");
  EXPECT_EQ(r.error().causes()[0].message, "Invalid value: \"../x\": " + kLabelError);
}

}  // namespace
}  // namespace ringmaster::local
