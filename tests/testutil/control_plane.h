#pragma once
// The API servers tests run against: the embedded one (`ringmaster local serve`) and a real
// control plane for tests (envtest: upstream kube-apiserver and kube-controller-manager with etcd,
// from the directory RINGMASTER_ENVTEST names; its `start RUN_DIR` prints the admin kubeconfig
// last, `stop RUN_DIR` ends it). Tests that need envtest skip, saying why, where it is not set.
//
// Ownership: each object owns what it started and stops it on destruction.
// Thread-safety: one test thread. Failure: start() returns why the server is not up ("" when it
// is), so that a fixture can skip or assert as it sees fit.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "process.h"

namespace ringmaster::testutil {

enum class ControlPlane {
  kLocal,    // the embedded API server of `ringmaster local`
  kEnvtest,  // a real kube-apiserver + kube-controller-manager (RINGMASTER_ENVTEST)
};
// "local" | "envtest": the suffix of parameterized tests' names.
std::string controlPlaneName(ControlPlane plane);
// Both, for INSTANTIATE_TEST_SUITE_P(..., ::testing::ValuesIn(kControlPlanes), ...).
inline const std::vector<ControlPlane> kControlPlanes = {ControlPlane::kLocal,
                                                         ControlPlane::kEnvtest};
// "" when tests can run on `plane` here, else what the machine lacks (kubectl; for envtest,
// RINGMASTER_ENVTEST): tests skip with it.
std::string controlPlaneMissing(ControlPlane plane);

// Who uses a plane: one case (the cases still to run each start their own, so spares are worth
// starting), or every case of the test binary (they share this one: no spares).
enum class PlaneUse { kOneCase, kSharedByCases };

class EnvtestLaunch;  // control_plane.cc: one run of `start`, and what it started

// One envtest control plane in `run_dir`, or in the spare it adopted.
//
// Spares: a start takes about 8.5 s, mostly waiting for /readyz and the default ServiceAccount,
// and each envtest case starts its own. So once a plane is up and the binary has envtest cases
// still to run (GoogleTest's filter says which: the names ending in "/envtest"), the process
// starts the next two (niced where they may be reniced at adoption; two, because a start
// outlasts many cases; none for a plane the binary's cases share) in directories of their own; a
// later start with the same environment adopts the oldest, waiting for it if it is still starting.
// Spares nobody adopts are killed at exit. Every plane's daemons share a process group with a
// guardian shell that SIGKILLs it when the test process is gone, even after a crash.
class Envtest {
 public:
  explicit Envtest(std::string run_dir);
  ~Envtest();
  Envtest(const Envtest&) = delete;
  Envtest& operator=(const Envtest&) = delete;

  // Runs `start` with `env` added (ADMISSION, ...); "" when up, else why not. Every controller
  // runs but node lifecycle (unless `env` sets KCM_CONTROLLERS): the local kubelet is a node that
  // never goes NotReady for lack of a lease renewal the tests do not wait for.
  std::string start(const std::map<std::string, std::string>& env = {},
                    PlaneUse use = PlaneUse::kOneCase);
  // Kills the daemons; an adopted spare's directory goes with them.
  void stop();
  const std::string& kubeconfig() const { return kubeconfig_; }
  // Where the plane runs (logs/, pki/): `run_dir`, or an adopted spare's directory, to which
  // `run_dir` then links when it did not exist.
  std::string runDir() const;

 private:
  std::string run_dir_;
  std::unique_ptr<EnvtestLaunch> launch_;  // set while something may be running
  std::string kubeconfig_;
  bool linked_run_dir_ = false;  // run_dir_ is a link this object made to a spare's directory
};

// An API server alone, of either plane: `ringmaster local serve` on a fresh data dir, or envtest
// (every controller but node lifecycle: tests register Nodes that post no heartbeats).
class ApiServer {
 public:
  explicit ApiServer(ControlPlane plane, PlaneUse use = PlaneUse::kOneCase)
      : plane_(plane), use_(use) {}
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  std::string start();  // "" when serving, else why not
  // Local: SIGTERM, and "" when the server exited cleanly and removed its pid file, else what
  // went wrong. Envtest: stops it.
  std::string stop();
  // Local only: SIGTERM, then serve the same data dir again (a new port; the kubeconfig is
  // rewritten and the watch history starts over). "" when serving again, else why not.
  std::string restart();
  ControlPlane plane() const { return plane_; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  // The local server's data dir ("" on envtest).
  std::string dataDir() const;

 private:
  std::string serveLocal();

  ControlPlane plane_;
  PlaneUse use_;
  TempDir dir_;
  std::string kubeconfig_;
  std::unique_ptr<Process> local_;
  std::unique_ptr<Envtest> envtest_;
};

}  // namespace ringmaster::testutil
