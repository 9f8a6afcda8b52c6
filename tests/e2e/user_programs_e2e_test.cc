// e2e, what users bring: their own programs, in the real frameworks, as TrainingJobs applied by
// real kubectl to `ringmaster local` (the examples under examples/, each program delivered in a
// ConfigMap volume as on a cluster):
//   - a PyTorch DDP program (Debian's python3-torch, gloo, init_method="env://") of 2 pods x 2
//     processes: every rank's allreduce is right, training ends with equal replicas, and
//     `kubectl logs` shows each rank's lines; rank 0's torch store takes MASTER_PORT itself;
//   - the same program under torchrun, from PyTorchJob's PET_ variables;
//   - the same program raising ValueError on rank 3: the job fails with that line in its Failed
//     condition and Event, whichever pod the operator reads;
//   - an mpi4py program under `launcher: mpi` (mpirun over the job's sshd, the Horovod shape):
//     both pods' ranks report their own pod as their node;
//   - a program that reads TF_CONFIG as TensorFlow does and reaches every task's address;
//   - a program serving its own /metrics on the pod's declared metrics port, reachable there;
//   - a program that exits 0 on one rank and hangs on another: Failed after finishTimeoutSeconds,
//     naming the rank that did not finish;
//   - a command the image does not have: Failed at once, naming it.
// On both control planes. Skipped, saying why, where python3-torch or python3-mpi4py is missing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control_plane.h"
#include "local_cluster.h"
#include "process.h"

namespace ringmaster {
namespace {

using namespace std::chrono_literals;

std::string example(const std::string& name) {
  return std::string(std::getenv("RM_SOURCE_DIR")) + "/examples/" + name;
}

// What the machine lacks to run the frameworks' programs ("" when nothing).
std::string frameworksMissing() {
  auto r = testutil::run({"/usr/bin/python3", "-c", "import torch, mpi4py, numpy"}, {}, 120s);
  if (r.exit_code != 0) {
    return "needs Debian's python3-torch and python3-mpi4py (scripts/setup installs them): " +
           r.stderr_text;
  }
  return "";
}

std::string conditionMessage(const nlohmann::json& job, const std::string& type) {
  for (const auto& c : job.value("/status/conditions"_json_pointer, nlohmann::json::array())) {
    if (c.value("type", "") == type) return c.value("message", "");
  }
  return "";
}

class UserProgramsE2e : public ::testing::TestWithParam<testutil::ControlPlane> {
 protected:
  void SetUp() override {
    if (std::string why = testutil::controlPlaneMissing(GetParam()); !why.empty())
      GTEST_SKIP() << why;
    if (std::string why = frameworksMissing(); !why.empty()) GTEST_SKIP() << why;
    cluster_ = std::make_unique<testutil::LocalCluster>(GetParam());
    ASSERT_EQ(cluster_->start(), "");
  }

  // Applies the file at `path` and waits for TrainingJob `name` to end; the job as it ended.
  nlohmann::json run(const std::string& path, const std::string& name) {
    return ended(cluster_->kubectl({"apply", "-f", path}), name);
  }
  // The same for a manifest given as text.
  nlohmann::json runManifest(const std::string& yaml, const std::string& name) {
    return ended(cluster_->apply(yaml), name);
  }
  nlohmann::json ended(const testutil::ProcessResult& applied, const std::string& name) {
    EXPECT_EQ(applied.exit_code, 0) << applied.stderr_text;
    return cluster_->waitForJob(name, 300s, testutil::jobFinished);
  }

  std::string logs(const std::string& job, int pods) const {
    std::string all;
    for (int i = 0; i < pods; ++i) {
      const std::string pod = job + "-worker-" + std::to_string(i);
      all += "--- " + pod + "\n" + cluster_->podLog(pod);
    }
    return all;
  }

  std::unique_ptr<testutil::LocalCluster> cluster_;
};

TEST_P(UserProgramsE2e, PyTorchTorchrunMpiAndTensorFlowProgramsRunAsTrainingJobs) {
  // PyTorch DDP, init_method="env://".
  nlohmann::json ddp = run(example("pytorch-ddp.yaml"), "ddp");
  EXPECT_EQ(testutil::jobPhase(ddp), "Succeeded") << ddp.dump(2) << logs("ddp", 2);
  for (int pod = 0; pod < 2; ++pod) {
    const std::string log = cluster_->podLog("ddp-worker-" + std::to_string(pod));
    for (int rank = 2 * pod; rank < 2 * pod + 2; ++rank) {
      const std::string r = "rank " + std::to_string(rank);
      EXPECT_NE(log.find(r + "/4: allreduce 10 ok"), std::string::npos) << log;
      EXPECT_NE(log.find(r + ": done, replicas equal"), std::string::npos) << log;
    }
  }

  // The same program under torchrun: one agent per pod starts the pod's two ranks.
  nlohmann::json torchrun = run(example("pytorch-torchrun.yaml"), "ddp-torchrun");
  EXPECT_EQ(testutil::jobPhase(torchrun), "Succeeded")
      << torchrun.dump(2) << logs("ddp-torchrun", 2);
  const std::string agent_logs = logs("ddp-torchrun", 2);
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(agent_logs.find("rank " + std::to_string(rank) + ": done, replicas equal"),
              std::string::npos)
        << agent_logs;
  }
  EXPECT_NE(agent_logs.find("started torchrun (pod 1)"), std::string::npos) << agent_logs;

  // One rank raises: its own error line is the job's reason, on the condition and the Event.
  std::string failing = testutil::readFile(example("pytorch-ddp.yaml"));
  failing = failing.substr(failing.find("apiVersion: ringmaster.dev/v1alpha1"));
  failing.replace(failing.find("name: ddp\n"), 10, "name: ddp-fail\n");
  const std::string threads = "  - {name: OMP_NUM_THREADS, value: \"1\"}\n";
  failing.replace(failing.find(threads), threads.size(),
                  threads + "  - {name: FAIL_RANK, value: \"3\"}\n");
  nlohmann::json failed = runManifest(failing, "ddp-fail");
  const std::string error = "ValueError: rank 3 cannot read its shard";
  EXPECT_EQ(testutil::jobPhase(failed), "Failed") << failed.dump(2);
  EXPECT_NE(conditionMessage(failed, "Failed").find(error), std::string::npos) << failed.dump(2);
  std::string events;
  EXPECT_TRUE(testutil::eventually(60s, [&] {
    events = cluster_
                 ->kubectl({"get", "events", "--field-selector", "involvedObject.name=ddp-fail",
                            "-o", "json"})
                 .stdout_text;
    return events.find(error) != std::string::npos;
  })) << events;

  // mpi4py under mpirun: each pod is a node of its own.
  nlohmann::json mpi = run(example("mpi4py-allreduce.yaml"), "mpi4py");
  EXPECT_EQ(testutil::jobPhase(mpi), "Succeeded") << mpi.dump(2) << logs("mpi4py", 2);
  const std::string mpi_logs = logs("mpi4py", 2);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string node = "mpi4py-worker-" + std::to_string(rank / 2);
    EXPECT_NE(mpi_logs.find("rank " + std::to_string(rank) + "/4 on " + node + ": allreduce 10 ok"),
              std::string::npos)
        << mpi_logs;
  }

  // TF_CONFIG: every task, the ps pod's too (spec.roles.ps), reaches every other at the address
  // its cluster names.
  nlohmann::json tf = run(example("tensorflow-tf-config.yaml"), "tf-config");
  // The job succeeds with worker 0 and the ps pod; worker 1 ends on its own (cleanPodPolicy None).
  nlohmann::json worker1;
  EXPECT_TRUE(testutil::eventually(120s, [&] {
    worker1 = cluster_->get("pod", "tf-config-worker-1");
    return worker1.value("/status/phase"_json_pointer, std::string()) == "Succeeded";
  })) << worker1.dump(2);
  const std::string tf_logs =
      logs("tf-config", 2) + "--- tf-config-ps-0\n" + cluster_->podLog("tf-config-ps-0");
  EXPECT_EQ(testutil::jobPhase(tf), "Succeeded") << tf.dump(2) << tf_logs;
  for (const auto& [role, tasks] : {std::pair<std::string, int>{"worker", 4}, {"ps", 2}}) {
    for (int task = 0; task < tasks; ++task) {
      const std::string address = "tf-config-" + role + "-" + std::to_string(task / 2) +
                                  ".tf-config.default.svc:" + std::to_string(2222 + task % 2);
      EXPECT_NE(tf_logs.find(role + " task " + std::to_string(task) + " of " +
                             std::to_string(tasks) + " at " + address + ": reached all 6 tasks"),
                std::string::npos)
          << tf_logs;
    }
  }
  EXPECT_EQ(tf["status"]["roles"]["ps"].value("succeeded", 0), 1) << tf.dump(2);

  // ParameterServerStrategy's shape: the workers and the server serve until stopped; the chief
  // reaches them all and exits, and its success is the job's (TFJob's rule) once the evaluator,
  // outside TF_CONFIG's cluster, finished too.
  nlohmann::json strategy = run(example("tensorflow-ps-strategy.yaml"), "tf-ps-strategy");
  const std::string chief_log = cluster_->podLog("tf-ps-strategy-chief-0");
  EXPECT_EQ(testutil::jobPhase(strategy), "Succeeded") << strategy.dump(2) << chief_log;
  EXPECT_TRUE(testutil::hasCondition(strategy, "Succeeded", "True", "ChiefSucceeded"))
      << strategy.dump(2);
  EXPECT_EQ(strategy["status"]["roles"]["chief"].value("succeeded", 0), 1) << strategy.dump(2);
  for (const char* task : {"worker 0 at tf-ps-strategy-worker-0.tf-ps-strategy.default.svc:2222",
                           "worker 1 at tf-ps-strategy-worker-1.tf-ps-strategy.default.svc:2222",
                           "ps 0 at tf-ps-strategy-ps-0.tf-ps-strategy.default.svc:2222"}) {
    EXPECT_NE(chief_log.find(std::string("chief reached ") + task), std::string::npos) << chief_log;
  }
  EXPECT_NE(chief_log.find("chief done: 2 workers, 1 ps"), std::string::npos) << chief_log;
  const std::string evaluator_log = cluster_->podLog("tf-ps-strategy-evaluator-0");
  EXPECT_EQ(strategy["status"]["roles"]["evaluator"].value("succeeded", 0), 1) << strategy.dump(2);
  EXPECT_NE(evaluator_log.find("evaluator reached ps 0 at "
                               "tf-ps-strategy-ps-0.tf-ps-strategy.default.svc:2222"),
            std::string::npos)
      << evaluator_log;
  EXPECT_NE(evaluator_log.find("evaluator 0 done beside 2 workers, 1 ps and 1 chief"),
            std::string::npos)
      << evaluator_log;

  // A program's own /metrics on the pod's declared `metrics` port (9090 + LOCAL_RANK), where the
  // chart's PodMonitor scrapes every worker pod, reachable at the pod's address.
  auto served = cluster_->apply(R"(apiVersion: v1
kind: ConfigMap
metadata: {name: serving-program}
data:
  serve.py: |
    import http.server, os, time
    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(f'user_steps_total{{rank="{os.environ["RANK"]}"}} 7\n'.encode())
    server = http.server.HTTPServer(("", 9090 + int(os.environ["LOCAL_RANK"])), Metrics)
    server.timeout = 0.2
    end = time.time() + 60
    while time.time() < end:
        server.handle_request()
---
apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: serving}
spec:
  replicas: 1
  procsPerReplica: 2
  restartPolicy: Never
  command: [python3, /app/serve.py]
  volumes:
  - {name: program, configMap: {name: serving-program}}
  volumeMounts:
  - {name: program, mountPath: /app, readOnly: true}
)");
  ASSERT_EQ(served.exit_code, 0) << served.stderr_text;
  for (int rank = 0; rank < 2; ++rank) {
    std::string body;
    EXPECT_TRUE(testutil::eventually(
        60s,
        [&] {
          const nlohmann::json pod = cluster_->get("pod", "serving-worker-0");
          const std::string ip = pod.value("/status/podIP"_json_pointer, std::string());
          int port = 0;
          for (const auto& p :
               pod.value("/spec/containers/0/ports"_json_pointer, nlohmann::json())) {
            if (p.value("name", "") == "metrics") port = p.value("containerPort", 0);
          }
          if (ip.empty() || port == 0) return false;
          body = testutil::httpGet(ip, port + rank, "/metrics").body;
          return body.find("user_steps_total") != std::string::npos;
        }))
        << "rank " << rank << ": " << body;
    EXPECT_NE(body.find("user_steps_total{rank=\"" + std::to_string(rank) + "\"} 7"),
              std::string::npos)
        << body;
  }
  cluster_->kubectl({"delete", "tj", "serving", "--wait=false"});

  // A program that exits 0 on one rank and hangs on another: the job fails when the others have
  // not followed within finishTimeoutSeconds, naming them, and nothing stays running.
  nlohmann::json straggler = runManifest(
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\n"
      "metadata: {name: straggler}\nspec:\n  replicas: 2\n"
      "  finishTimeoutSeconds: 5\n  restartPolicy: Never\n"
      "  command: [sh, -c, 'test \"$RANK\" = 0 || sleep 3600']\n",
      "straggler");
  EXPECT_EQ(testutil::jobPhase(straggler), "Failed") << straggler.dump(2);
  EXPECT_NE(conditionMessage(straggler, "Failed")
                .find("pod straggler-worker-1 (replica 1) still running 5 s after pod "
                      "straggler-worker-0 (replica 0) succeeded"),
            std::string::npos)
      << straggler.dump(2);
  EXPECT_TRUE(testutil::eventually(60s, [&] {
    return cluster_->findProcesses("", {{"RINGMASTER_JOB", "straggler"}}).empty();
  })) << "the straggler's processes outlived its job";

  // A command the image lacks: the job fails at once, naming it, and nothing stays running.
  nlohmann::json missing = runManifest(
      "apiVersion: ringmaster.dev/v1alpha1\nkind: TrainingJob\n"
      "metadata: {name: missing}\nspec:\n  replicas: 2\n"
      "  command: [no-such-program, --epochs, '1']\n"
      "  restartPolicy: Never\n",
      "missing");
  EXPECT_EQ(testutil::jobPhase(missing), "Failed") << missing.dump(2);
  EXPECT_NE(conditionMessage(missing, "Failed").find("no-such-program"), std::string::npos)
      << missing.dump(2);
  EXPECT_TRUE(testutil::eventually(60s, [&] {
    return cluster_->findProcesses("", {{"RINGMASTER_JOB", "missing"}}).empty();
  }));
}

INSTANTIATE_TEST_SUITE_P(ControlPlanes, UserProgramsE2e,
                         ::testing::ValuesIn(testutil::kControlPlanes),
                         [](const auto& info) { return testutil::controlPlaneName(info.param); });

}  // namespace
}  // namespace ringmaster
