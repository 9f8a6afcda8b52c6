#include "operator/reconciler.h"

#include <gtest/gtest.h>

#include <atomic>

#include "fake_api_server.h"
#include "operator/builders.h"
#include "operator/queue_admission.h"
#include "operator/status.h"
#include "test_jobs.h"

namespace ringmaster::op {
namespace {

using testing::FakeApiServer;
using testing::kJobs;
using testing::kPods;
using testing::makeJob;

const std::string kServices = "/api/v1/namespaces/default/services";
const std::string kConfigMaps = "/api/v1/namespaces/default/configmaps";
const std::string kSecrets = "/api/v1/namespaces/default/secrets";
const std::string kEvents = "/api/v1/namespaces/default/events";

class ManualClock : public kube::Clock {
 public:
  TimePoint now() const override { return TimePoint(std::chrono::nanoseconds(mono_.load())); }
  // Each reading moves on by 1 us, as a real clock would (Event names carry the nanoseconds).
  WallTime wallNow() const override {
    return WallTime(std::chrono::duration_cast<WallTime::duration>(
        std::chrono::nanoseconds(wall_.fetch_add(1000))));
  }
  void advance(std::chrono::nanoseconds d) {
    mono_ += d.count();
    wall_ += d.count();
  }

 private:
  std::atomic<int64_t> mono_{1'000'000'000};
  mutable std::atomic<int64_t> wall_{int64_t{1795312800} * 1'000'000'000};  // 2026-11-22T02:00:00Z
};

class FakeProgress : public ProgressSource {
 public:
  core::Result<kube::TrainingProgress> read(const std::string& host, int port) override {
    last_host = host;
    last_port = port;
    if (!progress) return core::unavailable("no trainer");
    return *progress;
  }
  std::optional<kube::TrainingProgress> progress;
  std::string last_host;
  int last_port = 0;
};

class ReconcilerTest : public ::testing::Test {
 protected:
  ReconcilerTest() { reconciler_ = makeReconciler(); }

  std::unique_ptr<Reconciler> makeReconciler() {
    Listers listers{jobs_, pods_, services_, config_maps_, nullptr};
    return std::make_unique<Reconciler>(api_, listers, events_, clock_, progress_, nullptr,
                                        Reconciler::Options{});
  }

  void apply(const kube::TrainingJob& job) {
    nlohmann::json j = kube::encode(job);
    j["metadata"].erase("uid");
    api_.put(kJobs, j);
    sync();
  }
  // The informer caches catch up with the server.
  // The pod cache caught up, holding what the operator's informer keeps of each pod.
  void syncPods() { api_.syncTo(*pods_, kPods, workerPodOf); }
  void sync() {
    api_.syncTo(*jobs_, kJobs);
    syncPods();
    api_.syncTo(*services_, kServices, ownedChildOf<kube::Service>);
    api_.syncTo(*config_maps_, kConfigMaps, ownedChildOf<kube::ConfigMap>);
  }
  core::Result<Action> reconcile(const std::string& key = "default/fmnist") {
    return reconciler_->reconcile(key);
  }
  // reconcile + sync, `n` times.
  void converge(int n = 3) {
    for (int i = 0; i < n; ++i) {
      core::Result<Action> a = reconcile();
      ASSERT_TRUE(a.ok()) << a.status().toString();
      sync();
    }
  }

  kube::TrainingJob job(const std::string& name = "fmnist") {
    return *kube::decode<kube::TrainingJob>(*api_.get(kJobs + "/" + name));
  }
  std::vector<kube::Pod> pods() { return api_.typed<kube::Pod>(kPods); }
  std::vector<std::string> podNames() {
    std::vector<std::string> out;
    for (const kube::Pod& p : pods()) out.push_back(p.metadata.name);
    return out;
  }
  // Plays the kubelet: sets a pod's phase, readiness, exit code and node.
  void setPod(const std::string& name, const std::string& phase, bool ready = false,
              std::optional<int> exit_code = std::nullopt, bool scheduled = true) {
    nlohmann::json p = *api_.get(kPods + "/" + name);
    if (scheduled) p["spec"]["nodeName"] = "local";
    p["status"]["phase"] = phase;
    p["status"]["podIP"] = "127.1.0." + std::to_string(name.back() - '0' + 1);
    p["status"]["conditions"] = {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}};
    if (exit_code) {
      p["status"]["containerStatuses"] = {
          {{"name", "worker"}, {"state", {{"terminated", {{"exitCode", *exit_code}}}}}}};
    }
    api_.put(kPods, p);
  }
  // Plays the kubelet reporting the worker container's termination message.
  void setTerminationMessage(const std::string& name, const std::string& message) {
    nlohmann::json p = *api_.get(kPods + "/" + name);
    p["status"]["containerStatuses"][0]["state"]["terminated"]["message"] = message;
    api_.put(kPods, p);
  }
  void setAllPods(const std::string& phase, bool ready) {
    for (const std::string& name : podNames()) setPod(name, phase, ready);
  }
  std::vector<std::string> eventReasons() {
    std::vector<std::string> out;
    for (const nlohmann::json& e : api_.list(kEvents)) out.push_back(e.value("reason", ""));
    return out;
  }
  bool hasEvent(const std::string& reason, const std::string& type = "") {
    for (const nlohmann::json& e : api_.list(kEvents)) {
      if (e.value("reason", "") == reason && (type.empty() || e.value("type", "") == type)) {
        return true;
      }
    }
    return false;
  }
  const kube::Condition* condition(const kube::TrainingJob& j, const std::string& type) {
    return findCondition(j.status, type);
  }
  // A pass that finds `what` ("podgroup fmnist") of the job's name controlled by someone else:
  // it fails, creates no pod, and says why in a Warning Event and the Created condition.
  void expectRefusedAsNotOwned(const std::string& what) {
    EXPECT_FALSE(reconcile().ok());
    EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 0);
    EXPECT_TRUE(hasEvent("NotOwned", "Warning"));
    const kube::TrainingJob refused = job();
    const kube::Condition* created = condition(refused, kCreated);
    ASSERT_NE(created, nullptr);
    EXPECT_EQ(created->status, "False");
    EXPECT_EQ(created->reason, "NotOwned");
    EXPECT_NE(created->message.value_or("").find(what + " exists"), std::string::npos)
        << created->message.value_or("");
  }

  ManualClock clock_;
  FakeApiServer api_{clock_};
  kube::EventRecorder events_{api_, clock_, {"ringmaster-operator", "", "", 4096}};
  FakeProgress progress_;
  std::shared_ptr<kube::Store<kube::TrainingJob>> jobs_ =
      std::make_shared<kube::Store<kube::TrainingJob>>();
  std::shared_ptr<kube::Store<WorkerPod>> pods_ = std::make_shared<kube::Store<WorkerPod>>();
  std::shared_ptr<kube::Store<OwnedChild>> services_ = std::make_shared<kube::Store<OwnedChild>>();
  std::shared_ptr<kube::Store<OwnedChild>> config_maps_ =
      std::make_shared<kube::Store<OwnedChild>>();
  std::unique_ptr<Reconciler> reconciler_;
};

TEST_F(ReconcilerTest, CreatesServiceConfigMapAndOnePodPerReplicaAsTheBuildersSay) {
  apply(makeJob("fmnist", 2));
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob stored = testing::defaulted(job());

  std::vector<kube::Service> services = api_.typed<kube::Service>(kServices);
  ASSERT_EQ(services.size(), 1u);
  EXPECT_EQ(services[0].spec, buildService(stored).spec);
  std::vector<kube::ConfigMap> cms = api_.typed<kube::ConfigMap>(kConfigMaps);
  ASSERT_EQ(cms.size(), 1u);
  EXPECT_EQ(cms[0].data, buildConfigMap(stored).data);
  std::vector<kube::Pod> created = pods();
  ASSERT_EQ(created.size(), 2u);
  // One fresh store secret for the attempt, on every pod of it.
  const std::optional<std::string> secret = storeSecretOf(created[0]);
  ASSERT_TRUE(secret.has_value());
  EXPECT_EQ(secret->size(), 64u);
  EXPECT_EQ(storeSecretOf(created[1]), secret);
  for (int i = 0; i < 2; ++i) {
    kube::Pod want = buildWorkerPod(stored, i, 0, *secret);
    EXPECT_EQ(created[i].metadata.name, want.metadata.name);
    EXPECT_EQ(created[i].metadata.labels, want.metadata.labels);
    EXPECT_EQ(created[i].metadata.owner_references, want.metadata.owner_references);
    EXPECT_EQ(created[i].spec, want.spec);
  }
  EXPECT_TRUE(api_.typed<kube::Secret>(kSecrets).empty());  // native launcher: no SSH keys
  EXPECT_TRUE(hasEvent("CreatedPods", "Normal"));
}

// A job another controller manages (a multi-cluster dispatcher's copy) is left alone: no
// children and no status, so that the dispatcher's status is the only one.
TEST_F(ReconcilerTest, AJobManagedByAnotherControllerIsLeftAlone) {
  kube::TrainingJob elsewhere = makeJob("fmnist", 2);
  elsewhere.spec.managed_by = "kueue.x-k8s.io/multikueue";
  apply(elsewhere);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_TRUE(pods().empty());
  EXPECT_TRUE(api_.typed<kube::Service>(kServices).empty());
  EXPECT_TRUE(api_.typed<kube::ConfigMap>(kConfigMaps).empty());
  EXPECT_EQ(job().status, kube::TrainingJobStatus{});

  // Naming this operator is the same as leaving it unset.
  kube::TrainingJob ours = makeJob("fmnist", 2);
  ours.spec.managed_by = kControllerName;
  apply(ours);
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(pods().size(), 2u);
}

TEST_F(ReconcilerTest, TheJobsNetworkPolicyExistsBeforeItsPods) {
  apply(makeJob("fmnist", 2));
  converge(3);
  const std::string kNetworkPolicies =
      "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies";
  std::vector<nlohmann::json> policies = api_.list(kNetworkPolicies);
  ASSERT_EQ(policies.size(), 1u);
  EXPECT_EQ(policies[0]["spec"], buildNetworkPolicy(testing::defaulted(job())).spec);
  // Created first: no pod is ever reachable without it.
  const std::vector<kube::ApiRequest> calls = api_.calls();
  auto first = [&](const std::string& prefix) {
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].verb == kube::Verb::kPost && calls[i].path.rfind(prefix, 0) == 0) return i;
    }
    return calls.size();
  };
  EXPECT_LT(first(kNetworkPolicies), first(kPods));
}

TEST_F(ReconcilerTest, PodsAreNotCreatedWhenTheNetworkPolicyCannotBe) {
  api_.failNext(kube::Verb::kPost, "/apis/networking.k8s.io/v1/", 403, "Forbidden");
  apply(makeJob("fmnist", 2));
  sync();
  core::Result<Action> a = reconcile();
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 0);
}

TEST_F(ReconcilerTest, CreatesChildrenOnlyOnce) {
  apply(makeJob("fmnist", 2));
  converge(3);
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 2);
  EXPECT_EQ(api_.count(kube::Verb::kPost, kServices), 1);
  EXPECT_EQ(api_.count(kube::Verb::kPost, kConfigMaps), 1);
  EXPECT_TRUE(isTrue(job().status, kCreated));
  EXPECT_EQ(job().status.phase, "Pending");
}

TEST_F(ReconcilerTest, NoDuplicatePodsWhenTheCacheLags) {
  apply(makeJob("fmnist", 3));
  ASSERT_TRUE(reconcile().ok());
  // The pod cache has not seen the creations: the expectations hold the next passes back.
  for (int i = 0; i < 3; ++i) {
    api_.syncTo(*jobs_, kJobs);  // (a stale job would only cost a 409 on the status write)
    core::Result<Action> a = reconcile();
    ASSERT_TRUE(a.ok()) << a.status().toString();
  }
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 3);
  // Even once the expectations expire, deterministic names + AlreadyExists keep one per rank.
  clock_.advance(std::chrono::minutes(6));
  api_.syncTo(*jobs_, kJobs);
  core::Result<Action> a = reconcile();
  ASSERT_TRUE(a.ok()) << a.status().toString();
  EXPECT_EQ(podNames(),
            (std::vector<std::string>{"fmnist-worker-0", "fmnist-worker-1", "fmnist-worker-2"}));
}

// A pass that would start from a job older than the status this operator just wrote waits for
// the cache instead of computing from stale state and meeting 409 Conflict.
TEST_F(ReconcilerTest, APassWaitsForTheCacheToHoldItsOwnStatusWrite) {
  apply(makeJob("fmnist", 2));
  ASSERT_TRUE(reconcile().ok());  // pods created, status written
  const int status_writes = api_.count(kube::Verb::kPut, kJobs + "/fmnist/status");
  ASSERT_EQ(status_writes, 1);
  syncPods();  // the pod events came first; the job cache is behind
  setAllPods("Running", true);
  syncPods();
  core::Result<Action> waiting = reconcile();
  ASSERT_TRUE(waiting.ok()) << waiting.status().toString();
  ASSERT_TRUE(waiting->requeue_after.has_value());
  EXPECT_LE(*waiting->requeue_after, std::chrono::milliseconds(100));
  EXPECT_EQ(api_.count(kube::Verb::kPut, kJobs + "/fmnist/status"), status_writes);
  sync();  // the cache holds the write: the pass goes on, without a conflict
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(job().status.phase, "Running");
  // A cache that never catches up (a lost event) holds a job back for seconds, not forever.
  setPod("fmnist-worker-1", "Failed", false, 1);
  syncPods();
  core::Result<Action> held = reconcile();
  ASSERT_TRUE(held.ok() && held->requeue_after.has_value());
  const int writes = api_.count(kube::Verb::kPut, kJobs + "/fmnist/status");
  clock_.advance(std::chrono::seconds(11));
  (void)reconcile();  // from the stale copy: it tries (and meets the 409 the wait avoided)
  EXPECT_EQ(api_.count(kube::Verb::kPut, kJobs + "/fmnist/status"), writes + 1);
}

TEST_F(ReconcilerTest, RestartedOperatorCreatesOnlyTheMissingPods) {
  apply(makeJob("fmnist", 3));
  kube::TrainingJob stored = testing::defaulted(job());
  api_.put(kPods, kube::encode(buildWorkerPod(stored, 0, 0, "store-secret-for-tests")));
  sync();
  reconciler_ = makeReconciler();  // a fresh operator: no expectations, caches from a list
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 2);
  EXPECT_EQ(podNames().size(), 3u);
  // The recreated pods carry the store secret of the attempt's surviving pod: a new one would
  // lock them out of pod 0's store.
  for (const kube::Pod& p : pods()) {
    EXPECT_EQ(storeSecretOf(p), "store-secret-for-tests") << p.metadata.name;
  }
}

TEST_F(ReconcilerTest, RunningOnlyWhenEveryRankJoinedAndProgressFromRankZero) {
  apply(makeJob("fmnist", 2));
  converge(2);
  setPod("fmnist-worker-0", "Running", true);
  setPod("fmnist-worker-1", "Running", false);  // its launcher has not joined yet
  sync();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(job().status.phase, "Pending");
  EXPECT_EQ(job().status.world, "1/2");

  progress_.progress = kube::TrainingProgress{};
  progress_.progress->epoch = 2;
  progress_.progress->loss = 0.42;
  setPod("fmnist-worker-1", "Running", true);
  sync();
  core::Result<Action> a = reconcile();
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->requeue_after.has_value());  // progress refresh
  kube::TrainingJob j = job();
  EXPECT_EQ(j.status.phase, "Running");
  EXPECT_EQ(j.status.world, "2/2");
  EXPECT_EQ(condition(j, kRunning)->reason, "AllRanksJoined");
  EXPECT_EQ(condition(j, kRunning)->observed_generation, 1);
  EXPECT_EQ(j.status.progress->epoch, 2);
  EXPECT_EQ(progress_.last_host, "127.1.0.1");
  EXPECT_EQ(progress_.last_port, contract::kDefaultMetricsPort);
}

// A progress source that tells of changes, as ProgressPoller does.
class PushingProgress : public FakeProgress {
 public:
  bool onChange(ChangeListener l) override {
    listener = std::move(l);
    return true;
  }
  void forget(const std::string& host, int port) override { forgotten.emplace_back(host, port); }
  ChangeListener listener;
  std::vector<ProgressAddress> forgotten;
};

// With a source that says when progress moved, a Running job is not requeued to refresh it:
// the change brings the job back, and a job that no longer runs is forgotten by the source.
TEST_F(ReconcilerTest, ProgressThatMovedBringsTheJobBackInsteadOfATimer) {
  PushingProgress pushing;
  std::vector<std::string> woken;
  Reconciler::Options options;
  options.progress_changed = [&](const std::string& key) { woken.push_back(key); };
  Listers listers{jobs_, pods_, services_, config_maps_, nullptr};
  auto reconciler =
      std::make_unique<Reconciler>(api_, listers, events_, clock_, pushing, nullptr, options);
  ASSERT_TRUE(pushing.listener);
  apply(makeJob("fmnist", 2));
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(reconciler->reconcile("default/fmnist").ok());
    sync();
  }
  setAllPods("Running", true);
  sync();
  pushing.progress = kube::TrainingProgress{};
  pushing.progress->step = 10;
  core::Result<Action> a = reconciler->reconcile("default/fmnist");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->requeue_after.has_value()) << a->requeue_after->count() << " ms";
  EXPECT_EQ(job().status.progress->step, 10);

  pushing.listener({"127.1.0.1", contract::kDefaultMetricsPort});  // rank 0's reading moved
  EXPECT_EQ(woken, std::vector<std::string>{"default/fmnist"});
  pushing.listener({"127.1.0.2", contract::kDefaultMetricsPort});  // nobody reads rank 1
  EXPECT_EQ(woken.size(), 1u);

  setAllPods("Succeeded", false);
  sync();
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(reconciler->reconcile("default/fmnist").ok());
    sync();
  }
  EXPECT_EQ(job().status.phase, "Succeeded");
  const std::vector<ProgressAddress> rank0{{"127.1.0.1", contract::kDefaultMetricsPort}};
  EXPECT_EQ(pushing.forgotten, rank0);
  pushing.listener({"127.1.0.1", contract::kDefaultMetricsPort});
  EXPECT_EQ(woken.size(), 1u);
  reconciler.reset();
  EXPECT_FALSE(pushing.listener);  // unsubscribed
}

TEST_F(ReconcilerTest, StatusIsWrittenOnlyWhenItChanged) {
  apply(makeJob("fmnist", 2));
  converge(2);
  setAllPods("Running", true);
  sync();
  converge(1);
  const int writes = api_.count(kube::Verb::kPut, kJobs);
  converge(3);
  EXPECT_EQ(api_.count(kube::Verb::kPut, kJobs), writes);
}

TEST_F(ReconcilerTest, FailedRankRestartsTheWholeGangAsTheNextAttempt) {
  apply(makeJob("fmnist", 2));
  converge(2);
  setAllPods("Running", true);
  sync();
  converge(1);
  const std::optional<std::string> first_secret = storeSecretOf(pods()[0]);
  ASSERT_TRUE(first_secret.has_value());
  setPod("fmnist-worker-1", "Failed", false, 137);
  sync();
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  EXPECT_EQ(j.status.restarts, 1);
  EXPECT_EQ(j.status.phase, "Restarting");
  EXPECT_EQ(condition(j, kRestarting)->reason, "RankFailed");
  EXPECT_TRUE(podNames().empty());  // every rank, not just the failed one
  EXPECT_TRUE(hasEvent("RankFailed", "Warning"));

  sync();
  converge(2);
  std::vector<kube::Pod> again = pods();
  ASSERT_EQ(again.size(), 2u);
  // A new attempt, a new secret: the last attempt's peers cannot reach this one's store.
  const std::optional<std::string> second_secret = storeSecretOf(again[0]);
  ASSERT_TRUE(second_secret.has_value());
  EXPECT_NE(second_secret, first_secret);
  EXPECT_EQ(storeSecretOf(again[1]), second_secret);
  for (const kube::Pod& p : again) {
    EXPECT_EQ(p.metadata.labels.at(kAttemptLabel), "1");
    bool found = false;
    for (const kube::EnvVar& e : p.spec.containers[0].env) {
      found |= e.name == "RINGMASTER_ATTEMPT" && e.value == "1";
    }
    EXPECT_TRUE(found);
  }
  setAllPods("Running", true);
  sync();
  converge(1);
  EXPECT_EQ(job().status.phase, "Running");
  EXPECT_FALSE(isTrue(job().status, kRestarting));
}

TEST_F(ReconcilerTest, NeverReusesAPodNameWhileTheOldAttemptsPodIsInTheCache) {
  apply(makeJob("fmnist", 2));
  converge(2);
  setPod("fmnist-worker-0", "Failed", false, 137);
  sync();
  ASSERT_TRUE(reconcile().ok());  // restart: attempt 1, pods deleted
  api_.syncTo(*jobs_, kJobs);     // the job cache caught up, the pod cache did not
  api_.clearCalls();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 0);
  sync();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 2);
}

// The pod cache has seen the old attempt's pod go (or never saw it) while the API still holds
// it, terminating: its AlreadyExists is not the new pod. Taken as created, the pass waited for
// it until the expectations expired (300 s); now the pass after the old pod is gone creates it.
TEST_F(ReconcilerTest, AnOldAttemptsTerminatingPodIsNotTakenAsTheNewOne) {
  apply(makeJob("fmnist", 2));
  converge(2);
  nlohmann::json old = *api_.get(kPods + "/fmnist-worker-0");
  setPod("fmnist-worker-0", "Failed", false, 137);
  sync();
  ASSERT_TRUE(reconcile().ok());  // restart: attempt 1, pods deleted
  sync();
  // Behind the cache's back the API still holds worker-0 of attempt 0, being deleted.
  old["metadata"]["deletionTimestamp"] = "2026-11-22T02:00:00Z";
  api_.put(kPods, old);
  api_.clearCalls();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 2);  // both tried; worker-0 conflicted
  api_.erase(kPods + "/fmnist-worker-0");              // the kubelet finished the old pod
  sync();
  api_.clearCalls();
  ASSERT_TRUE(reconcile().ok());  // no clock advance: nothing waits for an expectation
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 1);
  std::vector<kube::Pod> now = pods();
  ASSERT_EQ(now.size(), 2u);
  for (const kube::Pod& pod : now) {
    EXPECT_EQ(pod.metadata.labels.at(kAttemptLabel), "1") << pod.metadata.name;
    EXPECT_FALSE(pod.metadata.deletion_timestamp.has_value()) << pod.metadata.name;
  }
}

TEST_F(ReconcilerTest, ExitCodePolicyTreats1To127AsPermanent) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.restart_policy = "ExitCode";
  apply(spec);
  converge(2);
  setPod("fmnist-worker-0", "Failed", false, 3);
  sync();
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  EXPECT_EQ(j.status.phase, "Failed");
  EXPECT_EQ(condition(j, kFailed)->reason, "RankFailed");
  EXPECT_NE(condition(j, kFailed)->message->find("exit code 3"), std::string::npos);
  EXPECT_EQ(j.status.restarts, 0);
  sync();
  ASSERT_TRUE(reconcile().ok());  // cleanPodPolicy Running: the surviving rank goes
  EXPECT_EQ(podNames(), std::vector<std::string>{"fmnist-worker-0"});
}

TEST_F(ReconcilerTest, ExitCodePolicyRetriesSignals) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.restart_policy = "ExitCode";
  apply(spec);
  converge(2);
  setPod("fmnist-worker-0", "Failed", false, 128 + 9);
  sync();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(job().status.restarts, 1);
  EXPECT_EQ(job().status.phase, "Restarting");
}

TEST_F(ReconcilerTest, RestartPolicyNeverFailsOnTheFirstFailure) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.restart_policy = "Never";
  apply(spec);
  converge(2);
  setPod("fmnist-worker-1", "Failed", false, 137);
  sync();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(job().status.phase, "Failed");
  EXPECT_TRUE(hasEvent("RankFailed", "Warning"));
}

TEST_F(ReconcilerTest, BackoffLimitCountsRestartsThenFails) {
  kube::TrainingJob spec = makeJob("fmnist", 1);
  spec.spec.backoff_limit = 1;
  apply(spec);
  converge(2);
  setPod("fmnist-worker-0", "Failed", false, 1);
  sync();
  converge(3);
  EXPECT_EQ(job().status.restarts, 1);
  ASSERT_EQ(podNames().size(), 1u);
  setPod("fmnist-worker-0", "Failed", false, 1);
  sync();
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  EXPECT_EQ(j.status.phase, "Failed");
  EXPECT_EQ(condition(j, kFailed)->reason, "BackoffLimitExceeded");
  EXPECT_TRUE(j.status.completion_time.has_value());
}

TEST_F(ReconcilerTest, AFailedRanksTerminationMessageReachesTheConditionAndTheEvent) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.restart_policy = "Never";
  apply(spec);
  converge(2);
  const std::string line = "E CORE [fmnist rank 1/2] dataset /nope: No such file or directory";
  setPod("fmnist-worker-1", "Failed", false, 1);
  setTerminationMessage("fmnist-worker-1", "rank 1 exited with code 1: " + line + "\n");
  sync();
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  ASSERT_EQ(j.status.phase, "Failed");
  const std::string want =
      "pod fmnist-worker-1 (replica 1) failed with exit code 1: rank 1 exited with code 1: " + line;
  EXPECT_EQ(condition(j, kFailed)->message->rfind(want, 0), 0u) << *condition(j, kFailed)->message;
  bool event_has_it = false;
  for (const nlohmann::json& e : api_.list(kEvents)) {
    event_has_it |= e.value("reason", "") == "RankFailed" &&
                    e.value("message", "").find(line) != std::string::npos;
  }
  EXPECT_TRUE(event_has_it);
}

TEST_F(ReconcilerTest, ALogTailMessageIsFoldedIntoOneBoundedLine) {
  kube::TrainingJob spec = makeJob("fmnist", 1);
  spec.spec.backoff_limit = 2;
  apply(spec);
  converge(2);
  setPod("fmnist-worker-0", "Failed", false, 137);
  std::string tail;
  for (int i = 0; i < 80; ++i)
    tail += "log line " + std::to_string(i) + " " + std::string(20, '.') + "\n";
  setTerminationMessage("fmnist-worker-0", tail);
  sync();
  ASSERT_TRUE(reconcile().ok());
  const std::string message = *condition(job(), kRestarting)->message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  EXPECT_NE(message.find("log line 79"), std::string::npos);
  EXPECT_EQ(message.find("log line 0 "), std::string::npos);
  EXPECT_LT(message.size(), kMaxFoldedMessageBytes + 200);
}

TEST_F(ReconcilerTest, RankZerosSummaryIsTheFinalProgress) {
  apply(makeJob("fmnist", 2));
  converge(2);
  setAllPods("Running", true);
  progress_.progress =
      kube::TrainingProgress{4, 940, 0.35, 50000, 1e9, 0.8731, std::nullopt, std::nullopt, {}};
  sync();
  converge(1);
  EXPECT_EQ(job().status.progress->epoch, 4);
  setPod("fmnist-worker-0", "Succeeded", false, 0);
  setPod("fmnist-worker-1", "Succeeded", false, 0);
  setTerminationMessage("fmnist-worker-0", R"({"epochs":5,"steps":1175,"finalTrainLoss":0.31234,)"
                                           R"("samplesPerSecond":54572.7,"testAccuracy":0.88623})");
  sync();
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  EXPECT_EQ(j.status.phase, "Succeeded");
  EXPECT_EQ(j.status.progress,
            (kube::TrainingProgress{
                5, 1175, 0.3123, 54573, 1e9, 0.8862, std::nullopt, std::nullopt, {}}));
}

TEST_F(ReconcilerTest, AMalformedSummaryKeepsTheLastProgressAndStillSucceeds) {
  apply(makeJob("fmnist", 1));
  converge(2);
  setAllPods("Running", true);
  progress_.progress = kube::TrainingProgress{
      4, 940, 0.35, 50000, std::nullopt, 0.8731, std::nullopt, std::nullopt, {}};
  sync();
  converge(1);
  setPod("fmnist-worker-0", "Succeeded", false, 0);
  setTerminationMessage("fmnist-worker-0", R"({"epochs": "five")");
  sync();
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  EXPECT_EQ(j.status.phase, "Succeeded");
  EXPECT_EQ(j.status.progress->epoch, 4);
}

TEST_F(ReconcilerTest, SucceedsWhenEveryPodSucceededAndTtlDeletesTheJob) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.ttl_seconds_after_finished = 60;
  apply(spec);
  converge(2);
  setAllPods("Succeeded", false);
  sync();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_EQ(job().status.phase, "Succeeded");
  EXPECT_TRUE(hasEvent("AllRanksSucceeded", "Normal"));
  sync();
  core::Result<Action> a = reconcile();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(a->requeue_after.has_value());
  EXPECT_EQ(podNames().size(), 2u);  // cleanPodPolicy Running keeps finished pods (their logs)
  clock_.advance(std::chrono::seconds(61));
  ASSERT_TRUE(reconcile().ok());
  EXPECT_FALSE(api_.get(kJobs + "/fmnist").has_value());
}

TEST_F(ReconcilerTest, SuspendedJobCreatesNoPodsUntilResumed) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.suspend = true;
  apply(spec);
  converge(2);
  EXPECT_TRUE(podNames().empty());
  EXPECT_EQ(job().status.phase, "Suspended");

  nlohmann::json j = *api_.get(kJobs + "/fmnist");
  j["spec"]["suspend"] = false;
  api_.put(kJobs, j);
  sync();
  converge(2);
  EXPECT_EQ(podNames().size(), 2u);
  EXPECT_FALSE(isTrue(job().status, kSuspended));
  EXPECT_TRUE(hasEvent("JobResumed"));
}

TEST_F(ReconcilerTest, SuspendDeletesRunningPodsAndKeepsStatus) {
  apply(makeJob("fmnist", 2));
  converge(2);
  setAllPods("Running", true);
  sync();
  converge(1);
  nlohmann::json j = *api_.get(kJobs + "/fmnist");
  j["spec"]["suspend"] = true;
  api_.put(kJobs, j);
  sync();
  ASSERT_TRUE(reconcile().ok());
  EXPECT_TRUE(podNames().empty());
  EXPECT_EQ(job().status.phase, "Suspended");
  EXPECT_EQ(job().status.restarts, 0);
  EXPECT_TRUE(isTrue(job().status, kCreated));
  // Nothing runs: the status says so instead of the last counts.
  EXPECT_EQ(job().status.world, "0/2");
  ASSERT_TRUE(job().status.replicas.has_value());
  EXPECT_EQ(job().status.replicas->active, 0);
  EXPECT_EQ(job().status.replicas->ready, 0);
}

TEST_F(ReconcilerTest, DeletedJobIsLeftToGarbageCollection) {
  apply(makeJob("fmnist", 2));
  converge(2);
  api_.erase(kJobs + "/fmnist");
  sync();
  api_.clearCalls();
  core::Result<Action> a = reconcile();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, Action::done());
  EXPECT_TRUE(api_.calls().empty());  // ownerReferences cascade; the operator deletes nothing
}

TEST_F(ReconcilerTest, DoesNotAdoptAPodOwnedByAnotherController) {
  apply(makeJob("fmnist", 2));
  kube::TrainingJob other = testing::defaulted(makeJob("fmnist", 2));
  other.metadata.uid = "someone-else";
  api_.put(kPods, kube::encode(buildWorkerPod(other, 0, 0, "store-secret-for-tests")));
  sync();
  core::Result<Action> a = reconcile();
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(api_.count(kube::Verb::kPost, kPods), 0);
  EXPECT_EQ(api_.count(kube::Verb::kDelete, kPods), 0);
  EXPECT_TRUE(hasEvent("NotOwned", "Warning"));
}

TEST_F(ReconcilerTest, DoesNotAdoptAServiceOwnedByAnotherJob) {
  apply(makeJob("fmnist", 2));
  kube::Service svc;
  svc.metadata.name = "fmnist";
  api_.put(kServices, kube::encode(svc));  // no owner at all
  sync();
  EXPECT_FALSE(reconcile().ok());
  EXPECT_TRUE(podNames().empty());
  EXPECT_TRUE(hasEvent("NotOwned", "Warning"));
}

TEST_F(ReconcilerTest, DoesNotTakeAnUnlabelledPodThatTheCacheCannotSee) {
  apply(makeJob("fmnist", 2));
  kube::Pod stranger;
  stranger.metadata.name = "fmnist-worker-1";  // no labels: the operator's informer skips it
  api_.put(kPods, kube::encode(stranger));
  core::Result<Action> a = reconcile();
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(hasEvent("NotOwned", "Warning"));
  EXPECT_TRUE(api_.get(kPods + "/fmnist-worker-1")
                  ->at("metadata")
                  .value("labels", nlohmann::json())
                  .is_null());  // untouched
}

TEST_F(ReconcilerTest, InvalidSpecFailsWithTheFieldAndCreatesNothing) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.replicas = 0;
  apply(spec);
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  EXPECT_EQ(j.status.phase, "Failed");
  ASSERT_NE(condition(j, kFailed), nullptr);
  EXPECT_EQ(condition(j, kFailed)->reason, "InvalidSpec");
  EXPECT_NE(condition(j, kFailed)->message->find("spec.replicas"), std::string::npos);
  EXPECT_TRUE(podNames().empty());
  EXPECT_TRUE(api_.typed<kube::Service>(kServices).empty());
  EXPECT_TRUE(hasEvent("InvalidSpec", "Warning"));
}

TEST_F(ReconcilerTest, UnschedulableGangIsReleasedAndRetriedWithBackoff) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.scheduling_policy = kube::SchedulingPolicy{};
  spec.spec.scheduling_policy->schedule_timeout_seconds = 30;
  apply(spec);
  converge(2);
  setPod("fmnist-worker-0", "Running", false);
  setPod("fmnist-worker-1", "Pending", false, std::nullopt, /*scheduled=*/false);
  sync();
  converge(1);
  EXPECT_EQ(podNames().size(), 2u);  // within the timeout
  clock_.advance(std::chrono::seconds(31));
  ASSERT_TRUE(reconcile().ok());
  kube::TrainingJob j = job();
  EXPECT_TRUE(podNames().empty());  // no half gang holds resources
  EXPECT_EQ(condition(j, kRestarting)->reason, "Unschedulable");
  EXPECT_EQ(j.status.schedule_retries, 1);
  EXPECT_EQ(j.status.restarts, 0);  // not a failure: backoffLimit untouched
  sync();
  converge(2);
  EXPECT_TRUE(podNames().empty());  // backoff (10 s) not over
  clock_.advance(std::chrono::seconds(11));
  converge(2);
  EXPECT_EQ(podNames().size(), 2u);
}

TEST_F(ReconcilerTest, AGangAQueueHeldGetsItsWholeScheduleTimeoutOnceReleased) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.metadata.labels[kQueueNameLabel] = "team-a";
  spec.spec.scheduling_policy = kube::SchedulingPolicy{};
  spec.spec.scheduling_policy->schedule_timeout_seconds = 30;
  apply(spec);
  converge(2);
  ASSERT_EQ(podNames().size(), 2u);
  for (const kube::Pod& pod : pods()) ASSERT_EQ(pod.spec.scheduling_gates.size(), 1u);
  clock_.advance(std::chrono::seconds(60));  // the queue holds the gang past its timeout
  converge(1);
  EXPECT_EQ(podNames().size(), 2u);
  // Admission: the gates come off; the pods are not scheduled yet.
  for (const std::string& name : podNames()) {
    nlohmann::json p = *api_.get(kPods + "/" + name);
    p["spec"].erase("schedulingGates");
    api_.put(kPods, p);
  }
  sync();
  converge(1);
  EXPECT_EQ(podNames().size(), 2u) << "the timeout counted the time the queue held the pods";
  EXPECT_EQ(job().status.schedule_retries.value_or(0), 0);
  clock_.advance(std::chrono::seconds(31));  // now past the timeout from the release
  ASSERT_TRUE(reconcile().ok());
  EXPECT_TRUE(podNames().empty());
  EXPECT_EQ(condition(job(), kRestarting)->reason, "Unschedulable");
}

TEST_F(ReconcilerTest, ActiveDeadlineFailsTheJobAndStopsItsPods) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.active_deadline_seconds = 100;
  apply(spec);
  converge(2);
  setAllPods("Running", true);
  sync();
  converge(1);
  clock_.advance(std::chrono::seconds(101));
  converge(2);
  EXPECT_EQ(condition(job(), kFailed)->reason, "DeadlineExceeded");
  EXPECT_TRUE(podNames().empty());
}

TEST_F(ReconcilerTest, MpiJobGetsItsSshSecret) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.launcher = "mpi";
  apply(spec);
  converge(2);
  std::vector<kube::Secret> secrets = api_.typed<kube::Secret>(kSecrets);
  ASSERT_EQ(secrets.size(), 1u);
  EXPECT_EQ(secrets[0].type, "kubernetes.io/ssh-auth");
  EXPECT_EQ(api_.count(kube::Verb::kPost, kSecrets), 1);
}

// The operator's RBAC has no get/list/watch on Secrets: it creates <job>-ssh and takes
// AlreadyExists (a restarted operator, or a pass whose status write failed) as its own.
TEST_F(ReconcilerTest, MpiSecretIsCreatedWithoutEverReadingSecrets) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.launcher = "mpi";
  apply(spec);
  converge(3);
  ASSERT_EQ(api_.typed<kube::Secret>(kSecrets).size(), 1u);
  // A fresh operator process (no memory of the Secret) meets AlreadyExists and carries on.
  reconciler_ = makeReconciler();
  api_.erase(kPods + "/fmnist-worker-1");
  sync();
  converge(3);
  EXPECT_EQ(podNames().size(), 2u);
  EXPECT_EQ(api_.count(kube::Verb::kPost, kSecrets), 2);
  EXPECT_EQ(api_.count(kube::Verb::kGet, kSecrets), 0);
  EXPECT_EQ(api_.typed<kube::Secret>(kSecrets).size(), 1u);
  EXPECT_FALSE(hasEvent("NotOwned"));
}

TEST_F(ReconcilerTest, GangSchedulerWithoutItsApiWarnsAndStillRuns) {
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.scheduling_policy = kube::SchedulingPolicy{};
  spec.spec.scheduling_policy->scheduler_name = "volcano";
  apply(spec);
  converge(2);
  EXPECT_TRUE(hasEvent("PodGroupUnavailable", "Warning"));
  EXPECT_EQ(podNames().size(), 2u);
}

TEST_F(ReconcilerTest, GangSchedulerWithItsApiGetsAPodGroup) {
  api_.serveGroup("scheduling.volcano.sh/v1beta1");
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.scheduling_policy = kube::SchedulingPolicy{};
  spec.spec.scheduling_policy->scheduler_name = "volcano";
  apply(spec);
  converge(2);
  std::optional<nlohmann::json> pg =
      api_.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/fmnist");
  ASSERT_TRUE(pg.has_value());
  EXPECT_EQ((*pg)["spec"]["minMember"], 2);
  EXPECT_FALSE(hasEvent("PodGroupUnavailable"));
}

// Every child is created through the one owned-create: an object of the child's name that the
// job does not control is refused (an Event, the Created condition), never taken as the job's.
TEST_F(ReconcilerTest, DoesNotAdoptANetworkPolicyItDoesNotOwn) {
  apply(makeJob("fmnist", 2));
  kube::NetworkPolicy stranger = buildNetworkPolicy(testing::defaulted(job()));
  stranger.metadata.owner_references.clear();
  stranger.spec = {{"podSelector", nlohmann::json::object()}};  // open to everyone
  api_.put("/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", kube::encode(stranger));
  sync();
  expectRefusedAsNotOwned("networkpolicy fmnist-workers");
}

TEST_F(ReconcilerTest, DoesNotAdoptAPodGroupOfAnotherJob) {
  api_.serveGroup("scheduling.volcano.sh/v1beta1");
  kube::TrainingJob spec = makeJob("fmnist", 2);
  spec.spec.scheduling_policy = kube::SchedulingPolicy{};
  spec.spec.scheduling_policy->scheduler_name = "volcano";
  apply(spec);
  kube::TrainingJob other = testing::defaulted(job());
  other.metadata.uid = "someone-else";
  api_.put("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
           kube::encode(buildPodGroup(other, *podGroupKindFor(other))));
  sync();
  expectRefusedAsNotOwned("podgroup fmnist");
}

// A pod the API server refuses (a quota, an admission policy) is the job's news: a condition
// with the server's words, status.reason for `kubectl get`, a Warning Event; the retry goes on.
TEST_F(ReconcilerTest, ARefusedPodShowsOnTheJobWithTheServersWords) {
  apply(makeJob("fmnist", 2));
  api_.failNext(kube::Verb::kPost, kPods, 403, "Forbidden");
  core::Result<Action> a = reconcile();
  ASSERT_FALSE(a.ok());  // retried with backoff
  const kube::TrainingJob refused = job();
  const kube::Condition* created = findCondition(refused.status, kCreated);
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->status, "False");
  EXPECT_EQ(created->reason, "FailedCreatePod");
  EXPECT_EQ(created->message, "injected Forbidden");
  EXPECT_EQ(job().status.phase, "Pending");
  EXPECT_EQ(job().status.reason, "FailedCreatePod");
  EXPECT_TRUE(hasEvent("FailedCreatePod", "Warning"));
  // Once the server admits every pod, Created is True and the reason is gone.
  sync();
  converge(2);
  EXPECT_TRUE(isTrue(job().status, kCreated));
  EXPECT_EQ(job().status.reason, std::nullopt);
}

// A pod its kubelet cannot start says so on the job, not only on the pod.
TEST_F(ReconcilerTest, APodThatCannotStartShowsOnTheJob) {
  apply(makeJob("fmnist", 2));
  converge(2);
  nlohmann::json p = *api_.get(kPods + "/fmnist-worker-1");
  p["spec"]["nodeName"] = "local";
  p["status"]["phase"] = "Pending";
  p["status"]["containerStatuses"] = {{{"name", "worker"},
                                       {"state",
                                        {{"waiting",
                                          {{"reason", "CreateContainerConfigError"},
                                           {"message", "configmap \"settings\" not found"}}}}}}};
  api_.put(kPods, p);
  sync();
  converge(1);
  const kube::TrainingJob stuck = job();
  const kube::Condition* running = findCondition(stuck.status, kRunning);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->status, "False");
  EXPECT_EQ(running->reason, "CreateContainerConfigError");
  EXPECT_EQ(running->message,
            "pod fmnist-worker-1 container worker: CreateContainerConfigError: "
            "configmap \"settings\" not found");
  EXPECT_EQ(job().status.reason, "CreateContainerConfigError");
  EXPECT_TRUE(hasEvent("CreateContainerConfigError", "Warning"));
}

TEST_F(ReconcilerTest, ApiErrorsAreReturnedWithTheJobAndCall) {
  apply(makeJob("fmnist", 2));
  api_.failNext(kube::Verb::kPost, kPods, 500, "InternalError");
  core::Result<Action> a = reconcile();
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("default/fmnist"), std::string::npos);
  EXPECT_NE(a.status().message().find("fmnist-worker-0"), std::string::npos);
  sync();
  converge(2);
  EXPECT_EQ(podNames().size(), 2u);  // the next pass makes up for it
}

}  // namespace
}  // namespace ringmaster::op
