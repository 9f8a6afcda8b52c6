#include "local/run/run_command.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include "local/run/apply.h"
#include "local/run/experiment_progress.h"
#include "local/run/job_progress.h"
#include "ringmaster/core/log.h"
#include "ringmaster/core/stop.h"
#include "ringmaster/kube/client_factory.h"
#include "ringmaster/kube/codec.h"
#include "ringmaster/kube/experiment.h"
#include "ringmaster/kube/kubeconfig.h"
#include "ringmaster/kube/resource_client.h"
#include "ringmaster/kube/training_job.h"
#include "ringmaster/kube/yaml_documents.h"

namespace ringmaster::local {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

core::Status waitForCrdEstablished(kube::ApiClient& client, const std::string& name,
                                   std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last;
  while (Clock::now() < deadline) {
    kube::ApiRequest get;
    get.path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name;
    kube::ApiResult<kube::ApiResponse> r = kube::callApi(client, get);
    if (r.ok()) {
      core::Result<nlohmann::json> crd = kube::parseJson(r->body);
      if (crd.ok() && crd->contains("status")) {
        for (const auto& c : (*crd)["status"].value("conditions", nlohmann::json::array())) {
          if (c.value("type", "") == "Established" && c.value("status", "") == "True")
            return core::Status::Ok();
        }
      }
    } else {
      last = r.status().message();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return core::timeoutError("CRD " + name + " not Established within " +
                            std::to_string(timeout.count()) + " s" +
                            (last.empty() ? "" : " (" + last + ")"));
}

// "Succeeded" / "Failed" when `object` (a TrainingJob or an Experiment) has ended, else empty.
std::string endedAs(const nlohmann::json& object) {
  const nlohmann::json conditions =
      object.contains("status") ? object["status"].value("conditions", nlohmann::json::array())
                                : nlohmann::json::array();
  for (const char* type : {"Failed", "Succeeded"}) {
    for (const auto& c : conditions) {
      if (c.value("type", "") == type && c.value("status", "") == "True") return type;
    }
  }
  return "";
}

// A finished job (or search) of the same name from an earlier run would end this run at once:
// remove it (its pods or trials go with it through garbage collection) and wait until it is gone.
core::Status removeFinished(kube::ApiClient& client, const std::string& path,
                            const std::string& what) {
  kube::ApiRequest get;
  get.path = path;
  RM_ASSIGN_OR_RETURN(kube::ApiResponse current, client.request(get));
  if (current.status_code == 404) return core::Status::Ok();
  core::Result<nlohmann::json> object = kube::parseJson(current.body);
  if (!object.ok() || endedAs(*object).empty()) return core::Status::Ok();
  std::cout << "removing " << what << " (" << endedAs(*object) << " in an earlier run)"
            << std::endl;
  kube::ApiRequest del;
  del.verb = kube::Verb::kDelete;
  del.path = path;
  del.query = {{"propagationPolicy", "Foreground"}};
  kube::ApiResult<kube::ApiResponse> deleted = kube::callApi(client, del);
  if (!deleted.ok() && !deleted.error().isNotFound()) return deleted.status();
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(120);
  auto next_note = start + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    RM_ASSIGN_OR_RETURN(kube::ApiResponse r, client.request(get));
    if (r.status_code == 404) return core::Status::Ok();
    // Foreground deletion waits for the cluster's garbage collector to delete the children
    // first; kube-controller-manager's learns of a CRD installed moments ago only at its next
    // discovery (every 30 s), so a wait here is normal on a new cluster.
    if (Clock::now() >= next_note) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - start).count();
      std::cout << "  still removing it after " << waited
                << " s: the garbage collector deletes its children first (a CRD installed "
                   "moments ago waits for its next discovery, up to 30 s)"
                << std::endl;
      next_note += std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return core::timeoutError(what + " from an earlier run is still being deleted after 120 s");
}

core::Status installCrd(kube::ApiClient& client) {
  Applier applier(client);
  RM_ASSIGN_OR_RETURN(std::vector<nlohmann::json> crds,
                      kube::parseYamlDocuments(builtInCrdsYaml(), "built-in crds/"));
  if (crds.size() < 2)
    return core::internalError("this binary was built without crds/ (TrainingJob, Experiment)");
  for (auto& crd : crds) {
    RM_ASSIGN_OR_RETURN(nlohmann::json stored, applier.apply(crd));
    (void)stored;
    RM_RETURN_IF_ERROR(
        waitForCrdEstablished(client, crd["metadata"]["name"], std::chrono::seconds(30)));
  }
  return core::Status::Ok();
}

// Reports an Experiment until it ends, then its trials, best first.
core::Status followExperiment(const RunOptions& options, kube::ApiClient& client,
                              const std::string& path, const std::string& name,
                              const fs::path& kubeconfig) {
  core::StopSource& stop = core::installSignalStop();
  SearchReporter reporter;
  const auto deadline = Clock::now() + options.timeout;
  kube::Experiment experiment;
  while (true) {
    if (stop.stopRequested()) {
      return core::cancelled("interrupted; the search keeps running (kubectl get exp " + name +
                             ")");
    }
    if (Clock::now() > deadline) {
      return core::timeoutError("experiment " + name + " did not finish within " +
                                std::to_string(options.timeout.count()) + " s");
    }
    kube::ApiRequest get;
    get.path = path;
    kube::ApiResult<kube::ApiResponse> r = kube::callApi(client, get);
    if (!r.ok()) return r.status().withContext("experiment " + name);
    RM_ASSIGN_OR_RETURN(experiment, kube::decodeText<kube::Experiment>(r->body));
    if (auto line = reporter.observe(experiment)) std::cout << name << "  " << *line << std::endl;
    if (!finishedSearch(experiment).empty()) break;
    stop.waitFor(std::chrono::milliseconds(500));
  }

  const std::string ns =
      experiment.metadata.namespace_name.empty() ? "default" : experiment.metadata.namespace_name;
  kube::ResourceClient<kube::TrainingJob> jobs(
      client, kube::ResourceType{"ringmaster.dev", "v1alpha1", "trainingjobs", true}, ns);
  kube::ListOptions selector;
  selector.label_selector = std::string(kube::kExperimentLabel) + "=" + name;
  kube::ApiResult<kube::List<kube::TrainingJob>> trials = jobs.list(selector);
  if (!trials.ok()) return trials.status().withContext("experiment " + name + ": its trials");
  std::cout << "\n" << name << ": " << searchOutcome(experiment) << "\n";
  if (const auto& best = experiment.status.best_trial) {
    std::cout << "  best trial " << best->name.value_or("?") << ":";
    for (const auto& [field, value] : best->parameters)
      std::cout << " " << field << "=" << value.dump();
    std::cout << "\n";
  }
  std::cout << trialTable(experiment, trials->items) << "Trials:  kubectl get tj -l "
            << kube::kExperimentLabel << "=" << name << "\n"
            << "The cluster stays up: export KUBECONFIG=" << kubeconfig.string() << "\n"
            << "Stop it:  "
            << (options.stop_command.empty() ? "ringmaster local down" : options.stop_command)
            << std::endl;
  if (finishedSearch(experiment) == "Failed") {
    return core::invalidArgument("experiment " + name + " failed: " + searchOutcome(experiment));
  }
  return core::Status::Ok();
}

}  // namespace

core::Status installBuiltInCrds(const std::filesystem::path& kubeconfig) {
  RM_ASSIGN_OR_RETURN(kube::KubeConfig config, kube::loadKubeConfigFile(kubeconfig));
  RM_ASSIGN_OR_RETURN(std::unique_ptr<kube::ApiClient> client, kube::makeApiClient(config));
  return installCrd(*client).withContext("installing the TrainingJob and Experiment CRDs");
}

core::Status runJob(const RunOptions& options,
                    const std::function<core::Status(const std::string&)>& ensure_up) {
  RM_ASSIGN_OR_RETURN(std::vector<nlohmann::json> docs, kube::readYamlDocuments(options.manifest));
  for (size_t i = 0; i < docs.size(); ++i) {
    RM_RETURN_IF_ERROR(checkObjectIdentity(
        docs[i], options.manifest.string() + " (document " + std::to_string(i + 1) + ")"));
  }
  int jobs = 0, searches = 0;
  for (const auto& d : docs) {
    jobs += d.value("kind", "") == "TrainingJob" ? 1 : 0;
    searches += d.value("kind", "") == "Experiment" ? 1 : 0;
  }
  if (jobs + searches != 1) {
    return core::invalidArgument(options.manifest.string() +
                                 ": expected one TrainingJob or one Experiment, found " +
                                 std::to_string(jobs) + " TrainingJob(s) and " +
                                 std::to_string(searches) + " Experiment(s)");
  }

  RM_RETURN_IF_ERROR(ensure_up(options.data_dir));
  const fs::path kubeconfig = fs::path(options.data_dir) / "kubeconfig";
  RM_ASSIGN_OR_RETURN(kube::KubeConfig config, kube::loadKubeConfigFile(kubeconfig));
  RM_ASSIGN_OR_RETURN(std::unique_ptr<kube::ApiClient> client, kube::makeApiClient(config));
  Applier applier(*client);
  // `up` installed the CRD this binary was built with; a cluster started by an older binary
  // gets it now.
  RM_RETURN_IF_ERROR(installCrd(*client).withContext("installing the built-in CRDs"));

  std::string job_path, job_name;
  for (auto& doc : docs) {
    const std::string kind = doc.value("kind", "");
    if (kind == "TrainingJob" || kind == "Experiment") {
      RM_ASSIGN_OR_RETURN(job_path, applier.objectPath(doc, true));
      job_name = doc["metadata"].value("name", "");
      std::string lower = kind;
      std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
      RM_RETURN_IF_ERROR(removeFinished(*client, job_path, lower + " " + job_name));
    }
    RM_ASSIGN_OR_RETURN(nlohmann::json stored, applier.apply(doc));
    std::cout << stored.value("kind", "object") << " " << stored["metadata"].value("name", "")
              << " applied" << std::endl;
  }

  if (searches == 1) {
    return followExperiment(options, *client, job_path, job_name, kubeconfig);
  }
  // SIGTERM/SIGINT: stop watching, leave the cluster and the job running.
  core::StopSource& stop = core::installSignalStop();
  ProgressReporter reporter(options.report_every);
  const auto deadline = Clock::now() + options.timeout;
  kube::TrainingJob job;
  while (true) {
    if (stop.stopRequested()) {
      return core::cancelled("interrupted; the job keeps running (kubectl get tj " + job_name +
                             ")");
    }
    if (Clock::now() > deadline) {
      return core::timeoutError("trainingjob " + job_name + " did not finish within " +
                                std::to_string(options.timeout.count()) + " s");
    }
    kube::ApiRequest get;
    get.path = job_path;
    kube::ApiResult<kube::ApiResponse> r = kube::callApi(*client, get);
    if (!r.ok()) return r.status().withContext("trainingjob " + job_name);
    RM_ASSIGN_OR_RETURN(job, kube::decodeText<kube::TrainingJob>(r->body));
    if (auto line = reporter.observe(job, Clock::now())) {
      std::cout << job_name << "  " << *line << std::endl;
    }
    if (!finishedPhase(job).empty()) break;
    stop.waitFor(std::chrono::milliseconds(500));
  }

  const std::string ns =
      job.metadata.namespace_name.empty() ? "default" : job.metadata.namespace_name;
  std::cout << "\n"
            << job_name << ": " << finalReason(job) << "\n"
            << "  " << formatProgress(job) << "\n";
  if (job.status.progress && job.status.progress->test_accuracy) {
    std::cout << "  test accuracy " << *job.status.progress->test_accuracy * 100 << "%\n";
  }
  if (auto note = resumeNote(job, fs::path(options.data_dir) / "kubelet" / "volumes")) {
    std::cout << *note << "\n";
  }
  std::cout << "Logs:  kubectl logs " << job_name << "-worker-0   (files under "
            << (fs::path(options.data_dir) / "kubelet" / "pods" / ns).string() << ")\n"
            << "The cluster stays up: export KUBECONFIG=" << kubeconfig.string() << "\n"
            << "Stop it:  "
            << (options.stop_command.empty() ? "ringmaster local down" : options.stop_command)
            << std::endl;
  if (finishedPhase(job) == "Failed") {
    return core::invalidArgument("trainingjob " + job_name + " failed: " + finalReason(job));
  }
  return core::Status::Ok();
}

}  // namespace ringmaster::local
