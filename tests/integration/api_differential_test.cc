// The embedded API server (`ringmaster local serve`) against a real kube-apiserver (envtest):
// the same requests, in the same order, to both; their answers must agree: status code, reason,
// message, the field of each cause, the objects they return (with the defaults each server
// applied) and the events a watch delivers. Where the embedded server is known to differ, the
// case names the JSON paths of its answer that differ; docs/local-api-fidelity.md says why each
// is left. A difference that is not listed fails, and so does a listed one that is gone (so the
// list cannot outlive what it describes).
//
// Needs RINGMASTER_ENVTEST (skips, saying so, without it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "control_plane.h"
#include "local_cluster.h"
#include "process.h"
#include "ringmaster/kube/api_client.h"
#include "ringmaster/kube/client_factory.h"
#include "ringmaster/kube/kubeconfig.h"

namespace ringmaster {
namespace {

using json = nlohmann::json;
using kube::Verb;
using testutil::ControlPlane;

constexpr std::string_view kApplyYaml = "application/apply-patch+yaml";

struct Case {
  Case(std::string name, Verb verb, std::string path, std::string body = "",
       std::string_view content_type = kube::kJsonContentType)
      : name(std::move(name)),
        verb(verb),
        path(std::move(path)),
        body(std::move(body)),
        content_type(content_type) {}
  // JSON pointers (into the observation: /code, /reason, /message, /causes, /object/...,
  // /events) under which the embedded server is known to answer differently.
  Case& gaps(std::vector<std::string> pointers) {
    known_gaps = std::move(pointers);
    return *this;
  }
  // Remember this answer's metadata.resourceVersion and uid for later paths and bodies.
  Case& capturing() {
    capture = true;
    return *this;
  }

  std::string name;
  Verb verb;
  std::string path;  // "{rv}" / "{uid}": what the last capturing case's answer carried
  std::string body;  // JSON or YAML text
  std::string content_type;
  std::vector<std::string> known_gaps;
  bool capture = false;
};

// One server's side: its client and what `capture` cases remembered.
struct Side {
  std::unique_ptr<kube::ApiClient> client;
  std::string rv, uid;
};

// A Service's allocated addresses differ by server: only their presence is compared.
json masked(json value) {
  if (!value.is_string()) return value;
  const std::string text = value.get<std::string>();
  const bool address =
      !text.empty() && text.find_first_not_of("0123456789.:abcdef") == std::string::npos;
  return address ? json("<address>") : value;
}

// What is compared of an object: everything but what every write changes.
json normalized(json object) {
  if (!object.is_object()) return object;
  if (object.contains("metadata")) {
    for (const char* volatile_field :
         {"uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink"}) {
      object["metadata"].erase(volatile_field);
    }
  }
  if (object.contains("spec") && object["spec"].is_object()) {
    auto& spec = object["spec"];
    if (spec.contains("clusterIP")) spec["clusterIP"] = masked(spec["clusterIP"]);
    if (spec.contains("clusterIPs")) {
      for (auto& a : spec["clusterIPs"]) a = masked(a);
    }
    // ServiceAccount admission names the token volume kube-api-access-<random suffix>.
    auto maskTokenVolume = [](json& named) {
      const std::string name = named.is_object() ? named.value("name", "") : "";
      if (name.rfind("kube-api-access-", 0) == 0) named["name"] = "kube-api-access-*";
    };
    if (spec.contains("volumes") && spec["volumes"].is_array()) {
      for (auto& v : spec["volumes"]) maskTokenVolume(v);
    }
    for (const char* list : {"initContainers", "containers"}) {
      if (!spec.contains(list) || !spec[list].is_array()) continue;
      for (auto& c : spec[list]) {
        if (!c.is_object() || !c.contains("volumeMounts")) continue;
        for (auto& m : c["volumeMounts"]) maskTokenVolume(m);
      }
    }
  }
  return object;
}

// The observation of one answer: what the two servers must agree on.
json observe(int code, const std::string& body, bool watch) {
  json answer = json::parse(body, nullptr, false);
  json seen = {{"code", code}};
  if (watch && code == 200) {
    // One event per line.
    json events = json::array();
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      json e = json::parse(line, nullptr, false);
      if (e.is_discarded()) continue;
      events.push_back({{"type", e.value("type", "")},
                        {"name", e["object"]["metadata"].value("name", "")},
                        {"data", e["object"].value("data", json())}});
    }
    seen["events"] = events;
    return seen;
  }
  if (answer.value("kind", "") == "Status") {
    seen["reason"] = answer.value("reason", "");
    seen["message"] = answer.value("message", "");
    json causes = json::array();
    if (answer.contains("details") && answer["details"].contains("causes")) {
      for (const auto& c : answer["details"]["causes"]) {
        causes.push_back({{"field", c.value("field", "")}, {"reason", c.value("reason", "")}});
      }
    }
    seen["causes"] = causes;
    return seen;
  }
  if (answer.contains("items")) {
    json names = json::array();
    for (const auto& item : answer["items"]) names.push_back(item["metadata"].value("name", ""));
    seen["names"] = names;
    return seen;
  }
  seen["object"] = normalized(answer);
  return seen;
}

bool under(const std::string& path, const std::string& prefix) {
  return path == prefix ||
         (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
          path[prefix.size()] == '/');
}

// Replaces "{rv}" and "{uid}" with what the side captured.
std::string substituted(std::string text, const Side& side) {
  for (const auto& [key, value] :
       {std::pair{std::string("{rv}"), side.rv}, std::pair{std::string("{uid}"), side.uid}}) {
    for (size_t at; (at = text.find(key)) != std::string::npos;)
      text.replace(at, key.size(), value);
  }
  return text;
}

// Both servers are shared by the suite (an envtest start costs about 15 s); each test works in a
// namespace of its own.
class ApiDifferentialTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() { servers().reset(); }

  struct Servers {
    testutil::ApiServer local{ControlPlane::kLocal};
    testutil::ApiServer real{ControlPlane::kEnvtest, testutil::PlaneUse::kSharedByCases};
  };
  static std::unique_ptr<Servers>& servers() {
    static std::unique_ptr<Servers> both;
    return both;
  }

  void SetUp() override {
    if (std::string why = testutil::controlPlaneMissing(ControlPlane::kEnvtest); !why.empty()) {
      GTEST_SKIP() << why;
    }
    if (!servers()) {
      servers() = std::make_unique<Servers>();
      ASSERT_EQ(servers()->local.start(), "");
      ASSERT_EQ(servers()->real.start(), "");
    }
    local_.client = clientFor(servers()->local);
    real_.client = clientFor(servers()->real);
    ASSERT_TRUE(local_.client && real_.client);
    static int tests = 0;
    name_ = "diff-" + std::to_string(++tests);
    ns_ = "/api/v1/namespaces/" + name_;
    compare(
        Case{"create a namespace", Verb::kPost, "/api/v1/namespaces",
             R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name_ + R"("}})"});
    awaitRootCaPublished();
  }

  // Both servers' controllers copy the CA into every new namespace as ConfigMap
  // kube-root-ca.crt and create ServiceAccount `default`, each at a moment of its choosing.
  // Waiting for them here keeps those writes out of the watches the cases open later, which
  // would otherwise see them or not by chance.
  void awaitRootCaPublished() {
    for (const std::string& path :
         {ns_ + "/configmaps/kube-root-ca.crt", ns_ + "/serviceaccounts/default"}) {
      for (Side* side : {&real_, &local_}) {
        kube::ApiRequest request;
        request.verb = Verb::kGet;
        request.path = path;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        bool found = false;
        while (!found && std::chrono::steady_clock::now() < deadline) {
          auto response = side->client->request(request);
          found = response.ok() && response->status_code == 200;
          if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        ASSERT_TRUE(found) << (side == &real_ ? "kube-controller-manager" : "the local server")
                           << " did not create " << path << " within 30 s";
      }
    }
  }

  static std::unique_ptr<kube::ApiClient> clientFor(const testutil::ApiServer& server) {
    auto config = kube::loadKubeConfigFile(server.kubeconfig());
    EXPECT_TRUE(config.ok()) << config.status().toString();
    if (!config.ok()) return nullptr;
    kube::ClientOptions options;
    options.max_attempts = 1;  // the answer itself is under test
    auto client = kube::makeApiClient(*config, options);
    EXPECT_TRUE(client.ok()) << client.status().toString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  static json send(Side& side, const Case& c) {
    kube::ApiRequest request;
    request.verb = c.verb;
    request.path = substituted(c.path, side);
    const size_t q = request.path.find('?');
    if (q != std::string::npos) {
      std::istringstream query(request.path.substr(q + 1));
      for (std::string kv; std::getline(query, kv, '&');) {
        const size_t eq = kv.find('=');
        request.query.emplace_back(kv.substr(0, eq),
                                   eq == std::string::npos ? "" : kv.substr(eq + 1));
      }
      request.path.resize(q);
    }
    request.body = substituted(c.body, side);
    if (!request.body.empty()) request.content_type = c.content_type;
    auto response = side.client->request(request);
    if (!response.ok()) return {{"transport error", response.status().toString()}};
    if (c.capture) {
      json object = json::parse(response->body, nullptr, false);
      if (!object.is_discarded() && object.contains("metadata")) {
        side.rv = object["metadata"].value("resourceVersion", "");
        side.uid = object["metadata"].value("uid", "");
      }
    }
    // Messages may name the object's uid, which differs by server.
    std::string body = response->body;
    if (!side.uid.empty()) {
      for (size_t at; (at = body.find(side.uid)) != std::string::npos;) {
        body.replace(at, side.uid.size(), "{uid}");
      }
    }
    return observe(response->status_code, body, c.path.find("watch=true") != std::string::npos);
  }

  // Sends `c` to both servers and checks that they differ exactly where `c` says they may.
  void compare(const Case& c) {
    SCOPED_TRACE(c.name);
    const json real = send(real_, c);
    const json local = send(local_, c);
    std::set<std::string> gaps_seen;
    for (const auto& op : json::diff(real, local)) {
      const std::string path = op["path"];
      bool known = false;
      for (const auto& gap : c.known_gaps) {
        if (under(path, gap)) {
          known = true;
          gaps_seen.insert(gap);
        }
      }
      EXPECT_TRUE(known) << c.name << ": the servers differ at " << path << " (" << op["op"]
                         << ")\n  real:  " << real.value(json::json_pointer(path), json()).dump()
                         << "\n  local: " << local.value(json::json_pointer(path), json()).dump()
                         << "\n  real answer:  " << real.dump()
                         << "\n  local answer: " << local.dump();
    }
    for (const auto& gap : c.known_gaps) {
      EXPECT_TRUE(gaps_seen.count(gap)) << c.name << ": the known gap at " << gap
                                        << " is gone; take it out of the case and of "
                                           "docs/local-api-fidelity.md\n  answer: "
                                        << real.dump();
    }
  }

  // A new CRD's resources are served a moment after it is Established: waits (up to 20 s) until
  // both servers list `path`.
  void awaitServed(const std::string& path) {
    for (int i = 0; i < 100; ++i) {
      kube::ApiRequest r;
      r.path = path;
      auto a = real_.client->request(r);
      auto b = local_.client->request(r);
      if (a.ok() && b.ok() && a->status_code == 200 && b->status_code == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  Side local_, real_;
  std::string name_;  // this test's namespace
  std::string ns_;    // its path
};

TEST_F(ApiDifferentialTest, BuiltinWritesErrorsAndWatch) {
  compare(
      Case{"create a ConfigMap", Verb::kPost, ns_ + "/configmaps",
           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"},"data":{"a":"1"}})"}
          .capturing());
  compare(
      Case{"create it again", Verb::kPost, ns_ + "/configmaps",
           R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"},"data":{"a":"1"}})"});
  compare(Case{"get a missing ConfigMap", Verb::kGet, ns_ + "/configmaps/nope", ""});
  compare(Case{"a name that is not a DNS subdomain", Verb::kPost, ns_ + "/configmaps",
               R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}})"});
  compare(Case{
      "a label value with a space", Verb::kPost, ns_ + "/configmaps",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm3","labels":{"tier":"back end"}}})"});
  // kube-apiserver repeats the same cause on an update (four times); the message says it once.
  compare(Case{"a label key that is not a qualified name", Verb::kPatch, ns_ + "/configmaps/cm1",
               R"({"metadata":{"labels":{"Example.com/x":"1"}}})", kube::kMergePatchContentType}
              .gaps({"/causes"}));
  compare(Case{"merge patch", Verb::kPatch, ns_ + "/configmaps/cm1", R"({"data":{"b":"2"}})",
               kube::kMergePatchContentType});
  compare(Case{"json patch whose test fails", Verb::kPatch, ns_ + "/configmaps/cm1",
               R"([{"op":"test","path":"/data/a","value":"x"}])", kube::kJsonPatchContentType}
              .gaps({"/causes"}));
  compare(Case{
      "update from a stale resourceVersion", Verb::kPut, ns_ + "/configmaps/cm1",
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","resourceVersion":"{rv}"},"data":{}})"});
  compare(Case{"a bad label selector", Verb::kGet, ns_ + "/configmaps?labelSelector=a === b", ""});
  compare(Case{
      "delete with a uid precondition that fails", Verb::kDelete, ns_ + "/configmaps/cm1",
      R"({"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"0d3c3a0e-0000-4000-8000-000000000000"}})"});
  compare(Case{"watch from the ConfigMap's creation", Verb::kGet,
               ns_ + "/configmaps?watch=true&timeoutSeconds=2&resourceVersion={rv}", ""});
  compare(Case{"an unknown field under fieldValidation=Strict", Verb::kPost,
               ns_ + "/configmaps?fieldValidation=Strict",
               R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm9"},"bogus":1})"}
              .gaps({"/code", "/reason", "/message", "/causes", "/object"}));
}

TEST_F(ApiDifferentialTest, ServerSideApply) {
  compare(Case{"apply creates", Verb::kPatch, ns_ + "/configmaps/cm2?fieldManager=alice",
               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm2}\ndata: {a: '1', b: '2'}\n",
               kApplyYaml});
  compare(Case{"a second manager's conflicting apply", Verb::kPatch,
               ns_ + "/configmaps/cm2?fieldManager=bob",
               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm2}\ndata: {a: '9'}\n",
               kApplyYaml}
              .gaps({"/code", "/reason", "/message", "/causes", "/object"}));
  compare(Case{"apply without a field the manager owned removes it", Verb::kPatch,
               ns_ + "/configmaps/cm2?fieldManager=alice",
               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm2}\ndata: {a: '1'}\n",
               kApplyYaml}
              .gaps({"/object/data"}));
}

TEST_F(ApiDifferentialTest, PodAndServiceDefaultsAndValidation) {
  // ServiceAccount `default` exists on both (awaitRootCaPublished): the real admission refuses
  // pods until it does.
  compare(Case{"a minimal pod", Verb::kPost, ns_ + "/pods",
               R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},
               "spec":{"containers":[{"name":"c","image":"busybox"}]}})"});
  compare(Case{"a pod with probes, resources and a ConfigMap volume", Verb::kPost, ns_ + "/pods",
               R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2"},
               "spec":{"restartPolicy":"Never","automountServiceAccountToken":false,
                 "volumes":[{"name":"cfg","configMap":{"name":"cm1"}}],
                 "containers":[{"name":"c","image":"busybox:1.36",
                   "resources":{"limits":{"cpu":"1","memory":"1Gi"}},
                   "livenessProbe":{"exec":{"command":["true"]}},
                   "ports":[{"containerPort":8080}],
                   "volumeMounts":[{"name":"cfg","mountPath":"/cfg"}]}]}})"});
  compare(Case{"a pod whose cpu is not a quantity", Verb::kPost, ns_ + "/pods",
               R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p3"},
               "spec":{"containers":[{"name":"c","image":"busybox",
                 "resources":{"limits":{"cpu":"abc"}}}]}})"});
  compare(Case{"a ClusterIP service", Verb::kPost, ns_ + "/services",
               R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},
               "spec":{"selector":{"app":"web"},"ports":[{"port":80}]}})"});
  compare(Case{"a headless service", Verb::kPost, ns_ + "/services",
               R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"workers"},
               "spec":{"clusterIP":"None","selector":{"app":"w"},"ports":[{"name":"store","port":29400}]}})"});
}

TEST_F(ApiDifferentialTest, CustomResourceValidation) {
  const std::string crd =
      R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"gadgets.example.dev"},
    "spec":{"group":"example.dev","scope":"Namespaced",
      "names":{"plural":"gadgets","singular":"gadget","kind":"Gadget"},
      "versions":[{"name":"v1","served":true,"storage":true,
        "schema":{"openAPIV3Schema":{"type":"object",
          "x-kubernetes-validations":[{"rule":"self.metadata.name != 'forbidden'","message":"that name is taken"}],
          "properties":{"spec":{"type":"object",
            "x-kubernetes-validations":[{"rule":"self.min <= self.max","message":"min must not exceed max"}],
            "properties":{
              "min":{"type":"integer","format":"int32","maximum":2147483647},
              "max":{"type":"integer","format":"int32","maximum":2147483647},
              "size":{"type":"string","maxLength":3},
              "color":{"type":"string","enum":["red","blue"]}}}}}}}]}})";
  compare(Case{"create the CRD", Verb::kPost,
               "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd});
  awaitServed("/apis/example.dev/v1/namespaces/" + name_ + "/gadgets");
  const std::string gadgets = "/apis/example.dev/v1/namespaces/" + name_ + "/gadgets";
  auto gadget = [](const std::string& name, const std::string& spec) {
    return R"({"apiVersion":"example.dev/v1","kind":"Gadget","metadata":{"name":")" + name +
           R"("},"spec":)" + spec + "}";
  };
  compare(
      Case{"a valid custom resource", Verb::kPost, gadgets, gadget("g1", R"({"min":1,"max":2})")});
  compare(Case{"a field-level rule", Verb::kPost, gadgets, gadget("g2", R"({"min":3,"max":2})")});
  compare(
      Case{"a root-level rule", Verb::kPost, gadgets, gadget("forbidden", R"({"min":1,"max":2})")});
  compare(Case{"a bound beyond int32", Verb::kPost, gadgets,
               gadget("g3", R"({"min":1,"max":3000000000})")});
  compare(Case{"too long and a failing rule at once", Verb::kPost, gadgets,
               gadget("g4", R"({"min":3,"max":2,"size":"abcd"})")});
  compare(Case{"a value outside the enum and a failing rule at once", Verb::kPost, gadgets,
               gadget("g6", R"({"min":3,"max":2,"color":"green"})")});
  compare(Case{"a wrong type and a rule over it", Verb::kPost, gadgets,
               gadget("g5", R"({"min":"three","max":2})")});
}

// A CRD's scale subresource (what `kubectl scale` and autoscalers write): the Scale read from the
// object, writes that reach only the spec's count and go through the object's own schema, rules
// and count checks, preconditions, dry runs and the methods it refuses.
TEST_F(ApiDifferentialTest, ScaleSubresource) {
  const std::string crd =
      R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
    "metadata":{"name":"dials.example.dev"},
    "spec":{"group":"example.dev","scope":"Namespaced",
      "names":{"plural":"dials","singular":"dial","kind":"Dial"},
      "versions":[{"name":"v1","served":true,"storage":true,
        "subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas",
          "statusReplicasPath":".status.replicas","labelSelectorPath":".status.selector"}},
        "schema":{"openAPIV3Schema":{"type":"object","properties":{
          "spec":{"type":"object",
            "x-kubernetes-validations":[{"rule":"self.replicas <= 5","message":"at most 5 replicas"}],
            "properties":{"replicas":{"type":"integer"},"color":{"type":"string"}}},
          "status":{"type":"object","properties":{
            "replicas":{"type":"integer"},"selector":{"type":"string"}}}}}}}]}})";
  compare(Case{"create the CRD", Verb::kPost,
               "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd});
  awaitServed("/apis/example.dev/v1/namespaces/" + name_ + "/dials");
  const std::string dials = "/apis/example.dev/v1/namespaces/" + name_ + "/dials";
  const std::string scale = dials + "/d1/scale";
  compare(Case{"a dial", Verb::kPost, dials,
               R"({"apiVersion":"example.dev/v1","kind":"Dial","metadata":{"name":"d1"},)"
               R"("spec":{"replicas":2,"color":"red"}})"});
  compare(Case{"its status", Verb::kPatch, dials + "/d1/status",
               R"({"status":{"replicas":1,"selector":"app=d1"}})", kube::kMergePatchContentType});
  compare(Case{"get its scale", Verb::kGet, scale});
  compare(Case{"scale it up", Verb::kPatch, scale, R"({"spec":{"replicas":4}})",
               kube::kMergePatchContentType});
  compare(Case{"a scale the object's rule refuses", Verb::kPatch, scale,
               R"({"spec":{"replicas":9}})", kube::kMergePatchContentType});
  compare(Case{"a negative scale", Verb::kPatch, scale, R"({"spec":{"replicas":-1}})",
               kube::kMergePatchContentType});
  compare(Case{"a json patch of the scale", Verb::kPatch, scale,
               R"([{"op":"replace","path":"/spec/replicas","value":3}])",
               kube::kJsonPatchContentType});
  compare(Case{"a strategic merge patch of the scale", Verb::kPatch, scale,
               R"({"spec":{"replicas":3}})", kube::kStrategicMergePatchContentType});
  compare(Case{"a scale without a name", Verb::kPut, scale, R"({"spec":{"replicas":3}})"});
  compare(Case{"a scale of another name", Verb::kPut, scale,
               R"({"metadata":{"name":"d2"},"spec":{"replicas":3}})"});
  compare(Case{"a scale over a stale version", Verb::kPut, scale,
               R"({"metadata":{"name":"d1","resourceVersion":"1"},"spec":{"replicas":3}})"});
  compare(Case{"put a scale", Verb::kPut, scale,
               R"({"metadata":{"name":"d1"},"spec":{"replicas":5}})"});
  compare(Case{"a dry run", Verb::kPatch, scale + "?dryRun=All", R"({"spec":{"replicas":0}})",
               kube::kMergePatchContentType});
  compare(Case{"the dial after them", Verb::kGet, dials + "/d1"});
  compare(Case{"the scale of a missing dial", Verb::kGet, dials + "/nope/scale"});
  compare(Case{"create a scale", Verb::kPost, scale, R"({"spec":{"replicas":1}})"});
  compare(Case{"a dial created with a negative count", Verb::kPost, dials,
               R"({"apiVersion":"example.dev/v1","kind":"Dial","metadata":{"name":"d3"},)"
               R"("spec":{"replicas":-3}})"});
}

// `kubectl get` of the kinds users list most, against both servers: the same columns and the
// same cells, but for what differs by nature (ages, allocated addresses, uids). This is the
// table kubectl prints from the server's Table answer, so a column the embedded server lacks,
// adds or orders differently shows here.
std::string normalizedTable(const std::string& text) {
  std::istringstream lines(text);
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string row;
    for (std::string w; words >> w;) {
      const bool age = !w.empty() && std::isdigit(static_cast<unsigned char>(w[0])) &&
                       w.find_first_not_of("0123456789smhdy") == std::string::npos &&
                       std::string("smhdy").find(w.back()) != std::string::npos;
      const bool address = w.find_first_not_of("0123456789.") == std::string::npos &&
                           std::count(w.begin(), w.end(), '.') == 3;
      row += (age ? std::string("<age>") : address ? std::string("<address>") : w) + " ";
    }
    out += row + "\n";
  }
  return out;
}

TEST_F(ApiDifferentialTest, KubectlGetPrintsTheSameTables) {
  const std::string ns = name_;
  const std::vector<std::string> objects = {
      R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"1","b":"2"}})",
      R"({"apiVersion":"v1","kind":"Secret","metadata":{"name":"sec"},"type":"Opaque","data":{"k":"dg=="}})",
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"selector":{"app":"x"},"ports":[{"name":"http","port":80,"protocol":"TCP"},{"name":"dns","port":53,"protocol":"UDP"}]}})",
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"headless"},"spec":{"clusterIP":"None","selector":{"app":"x"},"ports":[{"port":29500}]}})",
      R"({"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"}})",
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod"},"spec":{"containers":[{"name":"c","image":"busybox"}]}})",
      R"({"apiVersion":"v1","kind":"Event","metadata":{"name":"ev"},"involvedObject":{"kind":"Pod","name":"pod","namespace":")" +
          ns +
          R"("},"reason":"Started","message":"Started container c","type":"Normal","source":{"component":"kubelet","host":"node-1"},"count":3,"firstTimestamp":"2026-11-22T01:59:56Z","lastTimestamp":"2026-11-22T02:00:56Z"})"};
  const std::map<std::string, std::string> paths = {
      {"ConfigMap", "configmaps"},           {"Secret", "secrets"}, {"Service", "services"},
      {"ServiceAccount", "serviceaccounts"}, {"Pod", "pods"},       {"Event", "events"}};
  for (const std::string& object : objects) {
    const std::string kind = json::parse(object)["kind"];
    compare(Case{"create a " + kind, Verb::kPost, ns_ + "/" + paths.at(kind), object});
  }
  // Workloads of no replicas: kube-controller-manager's status for them is the empty one, so the
  // tables match whether or not a controller has looked yet.
  const std::string pod_template =
      R"("template":{"metadata":{"labels":{"app":"w","tier":"t"}},"spec":{"containers":[{"name":"a","image":"img-a"},{"name":"b","image":"img-b"}]}})";
  compare(Case{
      "create a Deployment", Verb::kPost, "/apis/apps/v1/namespaces/" + ns + "/deployments",
      R"({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dep"},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"w"},"matchExpressions":[{"key":"tier","operator":"In","values":["t","s"]}]},)" +
          pod_template + "}}"});
  compare(Case{
      "create a ReplicaSet", Verb::kPost, "/apis/apps/v1/namespaces/" + ns + "/replicasets",
      R"({"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"w","tier":"t"}},)" +
          pod_template + "}}"});
  // Nodes are cluster-wide: named after the test's namespace so that runs do not meet. One is
  // Ready with roles and every wide field; one is NotReady, cordoned and reports nothing.
  const std::string ready_node = ns + "-ready", cordoned_node = ns + "-cordoned";
  compare(Case{
      "create a Ready node", Verb::kPost, "/api/v1/nodes",
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + ready_node +
          R"json(","labels":{"node-role.kubernetes.io/worker":"","node-role.kubernetes.io/gpu":"","kubernetes.io/role":"edge"}},"status":{"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}],"addresses":[{"type":"Hostname","address":"h"},{"type":"ExternalIP","address":"203.0.113.7"},{"type":"InternalIP","address":"10.1.2.3"}],"nodeInfo":{"kubeletVersion":"v1.26.1","osImage":"Debian GNU/Linux 12 (bookworm)","kernelVersion":"6.1.0-13-amd64","containerRuntimeVersion":"containerd://1.6.20","machineID":"","systemUUID":"","bootID":"","kubeProxyVersion":"","operatingSystem":"linux","architecture":"amd64"}}})json"}
              .gaps({"/object/spec/taints"}));
  compare(Case{
      "create a cordoned node that is not ready", Verb::kPost, "/api/v1/nodes",
      R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + cordoned_node +
          R"("},"spec":{"unschedulable":true},"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}})"}
              .gaps({"/object/spec/taints"}));
  compare(Case{
      "a Service of two ports, one without a name", Verb::kPost, ns_ + "/services",
      R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"unnamed"},"spec":{"ports":[{"port":80},{"name":"b","port":81}]}})"});
  const std::string kubectl = testutil::findKubectl();
  // The TrainingJob CRD and a job, applied by kubectl to both: its printer columns are ours.
  const std::string source = std::getenv("RM_SOURCE_DIR") ? std::getenv("RM_SOURCE_DIR") : ".";
  const std::string job_yaml =
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\n"
      "metadata: {name: tj, namespace: " +
      ns + "}\nspec: {replicas: 2, image: img}\n";
  for (const testutil::ApiServer* server : {&servers()->real, &servers()->local}) {
    const std::map<std::string, std::string> env = {{"KUBECONFIG", server->kubeconfig()}};
    auto crd = testutil::run({kubectl, "apply", "-f", source + "/crds/trainingjob.yaml"}, env,
                             std::chrono::seconds(60));
    ASSERT_EQ(crd.exit_code, 0) << crd.stderr_text;
    ASSERT_TRUE(testutil::eventually(std::chrono::seconds(30), [&] {
      testutil::TempDir dir;
      std::ofstream(dir.path() + "/tj.yaml") << job_yaml;
      return testutil::run({kubectl, "apply", "-f", dir.path() + "/tj.yaml"}, env,
                           std::chrono::seconds(60))
                 .exit_code == 0;
    })) << "the TrainingJob CRD was not served";
  }
  // The workloads and nodes by name: kube-controller-manager adds a ReplicaSet of its own to the
  // Deployment, and each server has nodes of its own.
  const std::vector<std::string> resources = {
      "configmaps",     "secrets",       "services",           "serviceaccounts",
      "pods",           "events",        "trainingjobs",       "namespace/" + ns,
      "deployment/dep", "replicaset/rs", "node/" + ready_node, "node/" + cordoned_node};
  for (const std::string& resource : resources) {
    for (const char* format : {"", "wide"}) {
      std::vector<std::string> argv = {kubectl, "get", resource,
                                       "-n",    ns,    "--sort-by=.metadata.name"};
      if (*format != '\0') argv.insert(argv.end(), {"-o", format});
      auto on = [&](const testutil::ApiServer& server) {
        return testutil::run(argv, {{"KUBECONFIG", server.kubeconfig()}}, std::chrono::seconds(60));
      };
      const auto real = on(servers()->real);
      const auto local = on(servers()->local);
      ASSERT_EQ(real.exit_code, 0) << real.stderr_text;
      ASSERT_EQ(local.exit_code, 0) << local.stderr_text;
      // Every kind holds an object of ours: an empty table on both would compare nothing.
      EXPECT_NE(real.stdout_text.find("\n"), real.stdout_text.rfind("\n")) << resource;
      EXPECT_EQ(normalizedTable(local.stdout_text), normalizedTable(real.stdout_text))
          << "kubectl get " << resource << (*format ? " -o wide" : "") << "\nreal:\n"
          << real.stdout_text << "local:\n"
          << local.stdout_text;
    }
  }
  for (const std::string& node : {ready_node, cordoned_node})
    compare(Case{"delete node " + node, Verb::kDelete, "/api/v1/nodes/" + node, ""});
}

}  // namespace
}  // namespace ringmaster
