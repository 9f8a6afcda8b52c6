#pragma once
// ApiServer: the embedded Kubernetes API server of `ringmaster local`. It joins the
// object store (local/store) to the HTTPS transport (local/https) and speaks the REST dialect
// kubectl 1.32 expects (checked against a real kube-apiserver): discovery, OpenAPI v3 with schemas
// (openapi.h), resource URLs for get/list/watch/create/update/patch/delete (+ /status, pods'
// /binding and /log), Table answers for `kubectl get`, CRDs that add and remove served
// resources at run time with their schemas enforced (schema.h), ?dryRun=All, ?fieldValidation,
// server-side apply for the common case and protobuf bodies of the imperative `kubectl create`
// kinds. What differs from kube-apiserver: local/README.md.
//
// Ownership: start() returns the owner; it owns the store, the registry, the HTTPS server and a
// housekeeping thread (garbage collection, the workload controllers, watch bookmarks).
// Thread-safety: handle() runs concurrently on connection threads; stop() is idempotent. Failure:
// start() fails (Status with context) when the data directory, PKI or port cannot be used; request
// errors are answered as Kubernetes Status bodies.

#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "local/apiserver/cluster_ip_allocator.h"
#include "local/apiserver/registry.h"
#include "local/controllers/namespace_defaults.h"
#include "local/controllers/workload_controller.h"
#include "local/https/http_message.h"
#include "local/https/kubeconfig.h"
#include "local/https/pki.h"
#include "local/https/response_writer.h"
#include "local/https/server.h"
#include "local/https/service_account_token.h"
#include "local/store/object_store.h"
#include "ringmaster/core/status.h"

namespace ringmaster::local {

struct ApiServerOptions {
  std::filesystem::path data_dir;  // PKI, token, kubeconfig and the store's snapshot + log
  int port = 0;                    // 0: any free port
  ObjectStoreOptions store;
};

class ApiServer {
 public:
  static core::Result<std::unique_ptr<ApiServer>> start(ApiServerOptions options);
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  int port() const { return server_->port(); }
  std::string url() const { return server_->url(); }
  std::filesystem::path kubeconfigPath() const { return options_.data_dir / "kubeconfig"; }
  // Stops serving, ends watches, snapshots the store.
  core::Status stop();

  // One HTTP request (also used by tests without TLS).
  void handle(const Request& request, ResponseWriter& writer);
  ObjectStore& store() { return store_; }

 private:
  struct Target;
  explicit ApiServer(ApiServerOptions options);
  core::Status init();
  void housekeeping();

  void serveResource(const Request& request, ResponseWriter& writer, const std::string& group,
                     const std::string& version, const std::vector<std::string>& rest);
  void serveApply(const Request& request, ResponseWriter& writer, const Target& target);
  // Whether RBAC lets the request's user do it (rbac.h); the admin may do everything.
  bool authorized(const Request& request) const;
  // POST serviceaccounts/NAME/token: a token of that account (service_account_token.h).
  void serveTokenRequest(const Request& request, ResponseWriter& writer, const std::string& ns,
                         const std::string& name);
  void servePodSubresource(const Request& request, ResponseWriter& writer, const std::string& ns,
                           const std::string& name, const std::string& sub);
  // GET, PUT and PATCH of a custom resource's scale subresource (scale.h).
  void serveScale(const Request& request, ResponseWriter& writer, const Target& target);
  void serveList(const Request& request, ResponseWriter& writer, const Target& target, bool table);
  void serveWatch(const Request& request, ResponseWriter& writer, const Target& target, bool table);
  void afterWrite(const ApiResource& resource, const StoredObject& object);
  void registerCrd(const nlohmann::json& crd, bool set_status);
  void unregisterCrd(const nlohmann::json& crd);
  // On create: a free address of the service range unless the Service names one (or None).
  void assignClusterIp(nlohmann::json& service, const nlohmann::json* old);

  ApiServerOptions options_;
  ObjectStore store_;
  ResourceRegistry registry_;
  ClusterIpAllocator cluster_ips_;
  controllers::WorkloadController workloads_{store_};
  std::unique_ptr<controllers::NamespaceDefaults> namespace_defaults_;  // set by start()
  std::unique_ptr<ServiceAccountTokens> service_account_tokens_;        // set by start()
  mutable std::mutex rbac_log_mu_;
  mutable std::set<std::string> rbac_logged_;  // "<user> <verb> <group>/<resource>" seen allowed
  std::unique_ptr<Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool stopped_ = false;
  // A Deployment, ReplicaSet or Pod changed since the workload controllers' last pass (guarded
  // by mu_): the housekeeper runs them now rather than at its next tick.
  bool workloads_due_ = false;
  std::thread housekeeper_;
};

}  // namespace ringmaster::local
