#pragma once
// The e2e tests' cluster: `ringmaster local up` in a temporary data dir (API server, kubelet,
// operator), driven with real kubectl; `local down` on destruction. The same tests run on a real
// control plane too (ControlPlane::kEnvtest, control_plane.h), which `local up
// --cluster-kubeconfig` joins with the kubelet and operator. Plus the /proc helpers the fault tests
// use to find a pod's processes.
//
// Ownership: owns the data dir, the daemons `up` started and the envtest control plane (in
// <data dir>/envtest, or in an adopted spare's directory that it links to: control_plane.h).
// Thread-safety: one test thread. Failure: missing() says what the machine lacks (a reason to
// skip); start() reports why the cluster is not up instead of failing the test, so that a
// fixture can skip or assert as it sees fit.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control_plane.h"
#include "process.h"

namespace ringmaster::testutil {

class LocalCluster {
 public:
  explicit LocalCluster(ControlPlane plane = ControlPlane::kLocal) : plane_(plane) {}
  // `envtest_env`: added to envtest's `start` environment (e.g. ADMISSION=ResourceQuota).
  LocalCluster(ControlPlane plane, std::map<std::string, std::string> envtest_env)
      : plane_(plane), envtest_env_(std::move(envtest_env)) {}
  // `use`: whether this binary's cases share the cluster (sharedCluster()) or each has its own.
  LocalCluster(ControlPlane plane, PlaneUse use) : plane_(plane), use_(use) {}
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // "" when this machine has what the cluster needs, else what it lacks (kubectl; for envtest,
  // RINGMASTER_ENVTEST): tests skip with it.
  std::string missing() const;
  // `ringmaster local up --data-dir <tmp> <up_flags...>` (after starting envtest when that is
  // the control plane and none runs yet); "" when up, else why not.
  std::string start(const std::vector<std::string>& up_flags = {});
  // start() the first time; after that the first call's result, starting nothing: for a
  // cluster the cases of a binary share (sharedCluster()), whose first case starts it.
  std::string startOnce(const std::vector<std::string>& up_flags = {});
  ControlPlane controlPlane() const { return plane_; }
  bool up() const { return up_; }  // started, and not stopped since
  // `ringmaster local down` now (the destructor then does nothing); its result.
  ProcessResult stop();
  // SIGKILLs the operator `up` started and removes its pid file (so that `down` never signals a
  // reused pid); "" once it is gone, else why not.
  std::string killOperator();

  const std::string& dataDir() const { return dir_.path(); }
  std::string kubeconfig() const { return dir_.path() + "/kubeconfig"; }
  const std::map<std::string, std::string>& env() const { return env_; }
  const std::string& kubectlPath() const { return kubectl_; }

  ProcessResult kubectl(std::vector<std::string> args,
                        std::chrono::seconds limit = std::chrono::seconds(60)) const;
  // Writes `yaml` to a file in the data dir and `kubectl apply -f`s it.
  ProcessResult apply(const std::string& yaml) const;
  // `kubectl get <resource> <name> -o json`; an empty object when it does not exist.
  nlohmann::json get(const std::string& resource, const std::string& name) const;
  // Watches TrainingJob `name` (one `kubectl get --watch`) until done(job) or `limit`; the last
  // observation (an empty object when the job never appeared). Not a `kubectl get` a second:
  // each is ~90 ms of CPU, and the e2e tests spend most of their time here.
  nlohmann::json waitForJob(const std::string& name, std::chrono::seconds limit,
                            const std::function<bool(const nlohmann::json&)>& done) const;
  std::string podLog(const std::string& pod) const;  // `kubectl logs` (stdout + stderr)
  // Waits up to `limit` until the local kubelet's volume of PersistentVolumeClaim `claim` (in
  // namespace default) holds a file, e.g. a job's first checkpoint; "" then, else what the
  // job `job` looked like meanwhile. Not by status.progress: the operator refreshes it every
  // 5 s, and a short run may take less than that twice.
  std::string waitForClaimFiles(const std::string& claim, const std::string& job,
                                std::chrono::seconds limit) const;
  // testutil::findProcess(es) among this cluster's pods only: each of their processes carries
  // this cluster's API server port in KUBERNETES_SERVICE_PORT (orphans keep it too). A test's twin
  // on the other control plane runs at the same time with the same job names.
  pid_t findProcess(const std::string& program, std::map<std::string, std::string> env) const;
  std::vector<pid_t> findProcesses(const std::string& program,
                                   std::map<std::string, std::string> env) const;

 private:
  // `env` plus this cluster's API server port, which every process of its pods carries.
  std::map<std::string, std::string> ownPodsEnv(std::map<std::string, std::string> env) const;

  ControlPlane plane_;
  PlaneUse use_ = PlaneUse::kOneCase;
  std::optional<std::string> started_;  // startOnce()'s first result
  std::map<std::string, std::string> envtest_env_;
  TempDir dir_;
  std::string kubectl_;
  std::map<std::string, std::string> env_;
  bool up_ = false;
  std::unique_ptr<Envtest> envtest_;  // set while an envtest control plane may run
};

// The cluster every case of this test binary shares on `plane`, for cases that neither stop nor
// kill its daemons and name their jobs apart: an envtest start costs about 9 s of CPU, more than
// many cases. The first case's startOnce() starts it; it is taken down after the last test (a
// GoogleTest environment, so that a failing `local down` is reported).
LocalCluster& sharedCluster(ControlPlane plane);

// Runs `ringmaster local down --data-dir <dir>` when it goes out of scope: the cluster a test's
// `ringmaster local run` left up is stopped whatever assertion failed first (a failing `down`
// is reported on stderr). Declare it after
// an envtest control plane the cluster joined, so that it runs before that one stops.
class LocalClusterStopper {
 public:
  explicit LocalClusterStopper(std::string data_dir) : data_dir_(std::move(data_dir)) {}
  ~LocalClusterStopper();
  LocalClusterStopper(const LocalClusterStopper&) = delete;
  LocalClusterStopper& operator=(const LocalClusterStopper&) = delete;

 private:
  std::string data_dir_;
};

// status.phase of a TrainingJob ("" when none).
std::string jobPhase(const nlohmann::json& job);
// Whether the job has ended (Succeeded or Failed): waitForJob's usual `done`.
bool jobFinished(const nlohmann::json& job);
// Whether the job has condition `type` with `status` (and `reason`, unless empty).
bool hasCondition(const nlohmann::json& job, const std::string& type, const std::string& status,
                  const std::string& reason = "");
// The number a daemon of `local up` wrote to a file (pid, port); 0 when absent.
long readNumberFile(const std::string& path);
// The uids seen for each pod in `kubectl get pods -w -o custom-columns=NAME:...,UID:...` output:
// a pod name with two uids was created twice.
std::map<std::string, std::set<std::string>> uidsByPod(const std::string& rows);
// Polls `done` (every 200 ms, backing off to `longest_pause`) until it holds or `limit` passes;
// returns whether it held. A wait that races the job (act once it checkpointed) and polls
// something cheap passes kPromptly.
inline constexpr std::chrono::milliseconds kPromptly{200};
bool eventually(std::chrono::seconds limit, const std::function<bool()>& done,
                std::chrono::milliseconds longest_pause = std::chrono::milliseconds(1000));
// The environment of a running process (empty when unreadable).
std::map<std::string, std::string> environOf(pid_t pid);
// The newest process whose argv[0] contains `program` and whose environment has every entry of
// `env` (0 when none): e.g. the trainer with RINGMASTER_JOB=frozen and RANK=3.
pid_t findProcess(const std::string& program, const std::map<std::string, std::string>& env);
// Every live process that findProcess would consider ("" matches any program), oldest first.
std::vector<pid_t> findProcesses(const std::string& program,
                                 const std::map<std::string, std::string>& env);
// VmRSS of `pid` in KiB (0 when it is gone).
long residentKiB(pid_t pid);

}  // namespace ringmaster::testutil
