#include "trainer/ps/ps_process.h"

#include <unistd.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ringmaster/core/deadline.h"
#include "ringmaster/core/log.h"
#include "ringmaster/rendezvous/store.h"
#include "ringmaster/rendezvous/tcp_store.h"
#include "trainer/data/sampler.h"
#include "trainer/ps/parameter_server.h"
#include "trainer/ps/ps_metrics.h"
#include "trainer/ps/ps_tcp_connection.h"
#include "trainer/ps/ps_tcp_server.h"
#include "trainer/ps/ps_worker.h"
#include "trainer/ps/push_step.h"
#include "trainer/ps/server_checkpoint.h"
#include "trainer/trainer_metrics.h"
#include "trainer/training_loop.h"

namespace ringmaster::trainer::ps {
namespace {

using Clock = std::chrono::steady_clock;

std::string roleName(const PsPlacement& p) {
  return std::string(p.role == PsRole::kServer ? "parameter server " : "ps worker ") +
         std::to_string(p.index);
}

bool stopped(const PsRun& run) { return run.stop != nullptr && run.stop->stopRequested(); }

// Sleeps up to `timeout`; true (early) once a stop is requested.
bool stopWithin(const PsRun& run, std::chrono::milliseconds timeout) {
  if (run.stop != nullptr) return run.stop->waitFor(timeout);
  std::this_thread::sleep_for(timeout);
  return false;
}

std::string stopReason(const PsRun& run) {
  return run.stop != nullptr ? run.stop->reason() : "stop requested";
}

// Once a stop is requested, gives the worker's loop `grace` to leave its servers between steps;
// a worker still waiting on a server by then (a pull the staleness bound holds behind a peer
// that does not move) has its connections shut, so that it stops now, as a dropped worker.
class StopInterrupter {
 public:
  StopInterrupter(const core::StopSource* stop, std::vector<PsTcpConnection*> connections,
                  std::chrono::milliseconds grace)
      : connections_(std::move(connections)) {
    if (stop == nullptr) return;
    thread_ = std::thread([this, grace] {
      std::unique_lock lock(mu_);
      changed_.wait(lock, [this] { return stopping_ || done_; });
      if (changed_.wait_for(lock, grace, [this] { return done_; })) return;
      RM_LOG(INFO, COMM) << "still waiting on a parameter server " << grace.count()
                         << " ms after the stop: shutting its connections";
      for (PsTcpConnection* c : connections_) c->interrupt();
    });
    on_stop_.emplace(*stop, [this] {
      std::lock_guard lock(mu_);
      stopping_ = true;
      changed_.notify_all();
    });
  }
  ~StopInterrupter() {
    on_stop_.reset();
    {
      std::lock_guard lock(mu_);
      done_ = true;
      changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }
  StopInterrupter(const StopInterrupter&) = delete;
  StopInterrupter& operator=(const StopInterrupter&) = delete;

 private:
  const std::vector<PsTcpConnection*> connections_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false, done_ = false;  // guarded by mu_
  std::thread thread_;
  std::optional<core::StopCallback> on_stop_;
};

// The store the job meets in; rank 0 hosts it unless the launcher does.
struct StoreLink {
  std::unique_ptr<rendezvous::TcpStoreServer> server;
  std::unique_ptr<rendezvous::TcpStoreClient> client;
};

core::Result<StoreLink> connectStore(const PsRun& run, const std::string& who) {
  StoreLink link;
  const contract::RankEnvironment& w = run.world;
  std::string host_error;
  if (w.rank == 0 && !w.use_agent_store) {
    auto server = rendezvous::TcpStoreServer::start("", w.store_port, w.store_secret);
    if (server.ok()) {
      link.server = std::move(server).value();
      RM_LOG(INFO, RDZV) << who << ": hosting the rendezvous store on port " << link.server->port();
    } else {
      host_error = server.status().message();
    }
  }
  auto client = rendezvous::TcpStoreClient::connect(w.master_addr, w.store_port, w.store_secret,
                                                    run.rendezvous_timeout);
  if (!client.ok()) {
    core::Status s = client.status().withContext(who + ": connect to the rendezvous store");
    if (!host_error.empty()) s = std::move(s).withContext("could not host it (" + host_error + ")");
    return s;
  }
  link.client = std::move(client).value();
  return link;
}

// What every rank derives alike from the settings: the model, its layout and the shard plan.
struct ModelPlan {
  std::unique_ptr<model::Model> model;
  FlatLayout layout;
  ShardPlan plan;
  int batch = 0;
  int64_t batches_per_epoch = 0;
};

core::Result<ModelPlan> planModel(const PsRun& run, const std::string& who) {
  contract::TrainerSettings settings = run.settings;
  RM_RETURN_IF_ERROR_CTX(resolveBatchSize(settings, run.placement.workers), who);
  if (run.elasticStartWorkers() > 0 && run.placement.consistency.isSync()) {
    return core::invalidArgument(who +
                                 ": an elastic job's workers come and go, which a sync step "
                                 "(every live worker's batch) cannot keep; use async or "
                                 "bounded staleness");
  }
  ModelPlan mp;
  mp.batch = static_cast<int>(settings.batch_size);
  RM_ASSIGN_OR_RETURN(mp.model,
                      model::Model::create(modelConfig(settings.model), settings.seed, mp.batch));
  if (mp.model->inputSize() != run.train->featureSize())
    return core::invalidArgument(who + ": model expects " + std::to_string(mp.model->inputSize()) +
                                 " input features, data set has " +
                                 std::to_string(run.train->featureSize()));
  // An elastic run's workers each draw from the whole data set.
  const int shards = run.elasticStartWorkers() > 0 ? 1 : run.placement.workers;
  const data::ShardedSampler sampler(run.train->size(), 0, shards, settings.seed);
  mp.batches_per_epoch = static_cast<int64_t>(sampler.numBatches(static_cast<size_t>(mp.batch)));
  mp.layout = FlatLayout::of(mp.model->paramViews());
  auto plan = planShards(mp.layout.tensors, run.placement.servers);
  if (!plan.ok()) return plan.status().withContext(who + ": shard plan");
  mp.plan = std::move(*plan);
  return mp;
}

std::string machineName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

}  // namespace

core::Status serveParameters(const PsRun& run) {
  const PsPlacement& place = run.placement;
  const std::string who = roleName(place);
  RM_ASSIGN_OR_RETURN(ModelPlan mp, planModel(run, who));
  const std::vector<Piece>& pieces = mp.plan.by_server.at(static_cast<size_t>(place.index));
  size_t elements = 0;
  for (const Piece& p : pieces) elements += static_cast<size_t>(p.elements);
  std::vector<float> initial(elements);
  gatherPieces(pieces, mp.layout, mp.model->params(), initial);

  ServerOptions options;
  options.consistency = place.consistency;
  options.optimizer = optimizerConfig(run.settings.optimizer);
  const double total_steps =
      static_cast<double>(run.settings.epochs) * static_cast<double>(mp.batches_per_epoch);
  options.learning_rate_at = [optimizer = run.settings.optimizer, total_steps](int64_t step) {
    // A loose run's last few pushes may count past the end: the schedule stays at its end.
    return learningRateAt(optimizer, std::min<int64_t>(step, static_cast<int64_t>(total_steps)),
                          total_steps);
  };
  options.wait_timeout = std::chrono::seconds(run.settings.comm_timeout_seconds);
  const contract::TrainerSettings::Checkpoint& checkpoints = run.settings.checkpoint;
  if (!checkpoints.path.empty()) options.snapshot_every = checkpoints.every_steps;
  std::unique_ptr<PsServerMetrics> server_metrics;
  if (run.registry != nullptr) {
    auto made = PsServerMetrics::create(*run.registry, place.index);
    if (!made.ok()) return made.status().withContext(who + ": metrics");
    server_metrics = std::move(*made);
    options.observer = server_metrics.get();
  }
  const int elastic_start = run.elasticStartWorkers();
  options.elastic = elastic_start > 0;
  auto created = ParameterServer::create(place.index, pieces, initial,
                                         options.elastic ? elastic_start : place.workers, options);
  if (!created.ok()) return created.status().withContext(who);
  std::unique_ptr<ParameterServer> server = std::move(*created);

  // The store first: rank 0 hosts it, and workers wait there for the addresses.
  RM_ASSIGN_OR_RETURN(StoreLink store, connectStore(run, who));
  // Before any worker can reach it: the servers agree on the step they all resume at.
  std::optional<ServerCheckpoints> saves;
  if (!checkpoints.path.empty()) {
    saves = ServerCheckpoints{
        checkpoints.path,
        place.index,
        place.servers,
        serverSignature(mp.model->signature(), place.index, place.servers, elements),
        contract::name(run.settings.optimizer.type),
        static_cast<int>(checkpoints.keep),
        run.world.attemptPrefix(),
        run.rendezvous_timeout};
    RM_ASSIGN_OR_RETURN(std::optional<ServerSnapshot> resume, agreeOnResume(*saves, *store.client));
    if (resume) RM_RETURN_IF_ERROR_CTX(server->restore(*resume), who);
  }
  auto tcp = PsTcpServer::start(server.get(), run.world.bindHost(), 0, run.world.store_secret);
  if (!tcp.ok()) return tcp.status().withContext(who + ": listen on " + run.world.bindHost());
  const HostPort address{advertisedHost(run.world.pod_ip, run.world.master_addr, machineName()),
                         (*tcp)->port()};
  const std::string key = serverAddressKey(run.world.attemptPrefix(), place.index);
  RM_RETURN_IF_ERROR_CTX(store.client->set(key, rendezvous::toBytes(toString(address))),
                         who + ": publish " + key);
  RM_LOG(INFO, COMM) << who << " of " << place.servers << ": listening on " << toString(address)
                     << " for "
                     << (options.elastic ? std::to_string(elastic_start) + " of up to " : "")
                     << place.workers << " worker(s), " << toString(place.consistency)
                     << (!place.consistency.isSync() && lookahead(options.optimizer, 1, 1) > 0
                             ? " (pulls look ahead along the momentum)"
                             : "")
                     << ", " << pieces.size() << " piece(s), " << elements << " parameters of "
                     << mp.model->signature();

  // Snapshots are written here, off the workers' requests, the newest one each time round.
  auto saveNewest = [&]() -> core::Status {
    if (!saves) return core::Status::Ok();
    std::optional<ServerSnapshot> snapshot = server->takeSnapshot();
    if (!snapshot) return core::Status::Ok();
    const Clock::time_point began = Clock::now();
    RM_RETURN_IF_ERROR(writeSnapshot(*saves, *snapshot));
    RM_LOG(DEBUG, CKPT) << who << ": checkpoint at step " << snapshot->step << " written in "
                        << static_cast<int>(1e3 * core::secondsSince(began)) << " ms";
    return core::Status::Ok();
  };
  while (server->liveWorkers() > 0) {
    if (core::Status written = saveNewest(); !written.ok()) {
      (*tcp)->stop();
      server->close();
      return written;
    }
    if (stopWithin(run, std::chrono::milliseconds(100))) {
      (*tcp)->stop();
      server->close();
      return core::cancelled(who + ": stopped (" + stopReason(run) + ") with " +
                             std::to_string(server->liveWorkers()) + " worker(s) still live");
    }
  }
  (*tcp)->stop();
  const ServerCounters c = server->counters();
  RM_LOG(INFO, COMM) << who << ": done, every worker left: " << c.pushes << " pushes (" << c.updates
                     << " updates), " << c.pulls << " pulls, bytes in " << c.bytes_pushed
                     << ", bytes out " << c.bytes_pulled << ", max staleness " << c.maxStaleness();
  return core::Status::Ok();
}

core::Result<TrainSummary> trainAgainstServers(const PsRun& run) {
  // As the data-parallel trainer: flush denormals (FTZ | DAZ) on this thread.
  _mm_setcsr(_mm_getcsr() | 0x8040);
  const PsPlacement& place = run.placement;
  const WorkerId id = place.index;
  const std::string who = roleName(place);
  RM_ASSIGN_OR_RETURN(ModelPlan mp, planModel(run, who));

  std::vector<HostPort> addresses;
  // Kept while this worker trains: worker 0 (rank 0) hosts the store the other workers read the
  // servers' addresses from, however late they come.
  RM_ASSIGN_OR_RETURN(StoreLink store, connectStore(run, who));
  // A key of the store once someone set it (waiting up to the rendezvous timeout); `what` names
  // it in the error.
  auto readKey = [&](const std::string& key, const std::string& what) -> core::Result<std::string> {
    auto value = store.client->get(key, run.rendezvous_timeout);
    if (!value.ok()) return value.status().withContext(who + ": " + what + " (" + key + ")");
    return rendezvous::toString(*value);
  };
  for (int s = 0; s < place.servers; ++s) {
    const std::string key = serverAddressKey(run.world.attemptPrefix(), s);
    RM_ASSIGN_OR_RETURN(const std::string text,
                        readKey(key, "address of parameter server " + std::to_string(s)));
    RM_ASSIGN_OR_RETURN(HostPort a, parseHostPort(text, key));
    addresses.push_back(std::move(a));
  }
  PsTcpConnectionOptions connection_options;
  connection_options.connect_deadline = run.rendezvous_timeout;
  connection_options.op_timeout = std::max<std::chrono::milliseconds>(
      connection_options.op_timeout, 2 * std::chrono::seconds(run.settings.comm_timeout_seconds));
  std::vector<std::unique_ptr<PsTcpConnection>> connections;
  std::vector<ServerConnection*> links;
  for (int s = 0; s < place.servers; ++s) {
    const HostPort& a = addresses[static_cast<size_t>(s)];
    auto c =
        PsTcpConnection::connect(a.host, a.port, run.world.store_secret, id, connection_options);
    if (!c.ok())
      return c.status().withContext(who + ": connect to parameter server " + std::to_string(s));
    links.push_back(c->get());
    connections.push_back(std::move(*c));
  }
  std::vector<PsTcpConnection*> interruptible;
  for (const auto& c : connections) interruptible.push_back(c.get());
  const StopInterrupter interrupter(run.stop, std::move(interruptible), std::chrono::seconds(2));
  auto leaveAll = [&] {
    for (size_t s = 0; s < connections.size(); ++s) {
      const core::Status left = connections[s]->leave();
      if (!left.ok())
        RM_LOG(WARN, COMM) << who << ": leaving parameter server " << s << ": " << left.toString();
    }
  };
  // A first start finds this worker live on every server at step 0; a worker process started
  // again after it died finds it gone and rejoins them where the others are.
  std::vector<WorkerStanding> standings;
  for (const auto& c : connections) standings.push_back(c->standing());
  core::Result<StartPlan> planned = planStart(standings, id);
  if (!planned.ok()) return planned.status().withContext(who);
  const StartPlan start_plan = std::move(*planned);
  for (const int s : start_plan.join) {
    RM_RETURN_IF_ERROR_CTX(connections[static_cast<size_t>(s)]->join(start_plan.step),
                           who + ": rejoin parameter server " + std::to_string(s));
  }
  const int elastic_start = run.elasticStartWorkers();
  const bool elastic = elastic_start > 0;
  if (!start_plan.join.empty() && elastic) {
    RM_LOG(INFO, COMM) << who << ": joined " << start_plan.join.size()
                       << " parameter server(s) at step " << start_plan.step + 1
                       << ": the job scaled up (or this worker's process started again), the "
                          "others go on beside it";
  } else if (!start_plan.join.empty()) {
    RM_LOG(INFO, COMM) << who << ": rejoined " << start_plan.join.size()
                       << " parameter server(s) at step " << start_plan.step + 1
                       << ": this worker's process started again, the others went on without it";
  }
  // Live everywhere past step 0: the servers resumed from their checkpoint, and so does the run.
  const bool resumed = start_plan.join.empty() && start_plan.step > 0;
  if (resumed)
    RM_LOG(INFO, CKPT) << who << ": resumed from the parameter servers' checkpoint at step "
                       << start_plan.step;
  // Every worker reaches its servers before any trains: under async and bounded staleness a
  // worker may otherwise push the whole run before a slow starter is up, and worker 0 would leave
  // with the store the others still read. A worker started again finds every key already there.
  RM_RETURN_IF_ERROR_CTX(
      store.client->set(workerReadyKey(run.world.attemptPrefix(), id), rendezvous::toBytes("1")),
      who + ": say it is ready");
  // An elastic job's workers wait only for those it started with, and one that joins as the job
  // scales up (it rejoins: live nowhere yet) for none.
  const int wait_for = !elastic ? place.workers : start_plan.join.empty() ? elastic_start : 0;
  for (int w = 0; w < wait_for; ++w) {
    RM_RETURN_IF_ERROR(readKey(workerReadyKey(run.world.attemptPrefix(), w),
                               "wait for worker " + std::to_string(w))
                           .status());
  }
  RM_ASSIGN_OR_RETURN(std::unique_ptr<PsWorker> worker,
                      PsWorker::create(id, mp.model.get(), mp.plan, mp.layout, std::move(links)));
  ShardBatches batches =
      elastic
          ? ShardBatches(*run.train, 0, 1, mp.batch, run.settings.seed + static_cast<uint64_t>(id))
          : ShardBatches(*run.train, id, place.workers, mp.batch, run.settings.seed);
  const int64_t per_epoch = batches.batchesPerEpoch();
  int64_t total = run.settings.epochs * per_epoch;
  if (run.settings.max_steps > 0) total = std::min(total, run.settings.max_steps);
  if (id == 0)
    RM_LOG(INFO, STEP) << mp.model->signature() << ": " << mp.model->params().size()
                       << " parameters on " << place.servers << " parameter server(s), "
                       << place.workers << " worker(s), " << toString(place.consistency) << ", "
                       << total << " steps";

  std::optional<TrainerMetrics> trainer_metrics;
  std::optional<PsWorkerMetrics> worker_metrics;
  if (run.registry != nullptr) {
    auto made = TrainerMetrics::create(*run.registry, "ps-tcp");
    if (!made.ok()) return made.status().withContext(who + ": metrics");
    trainer_metrics = std::move(*made);
    auto ps_made = PsWorkerMetrics::create(*run.registry);
    if (!ps_made.ok()) return ps_made.status().withContext(who + ": metrics");
    worker_metrics = *ps_made;
  }

  // The steps series counts the run's steps, as the data-parallel trainer's does after a resume.
  if (trainer_metrics && start_plan.step > 0) {
    trainer_metrics->steps->Increment(static_cast<double>(start_plan.step));
  }
  const Clock::time_point start = Clock::now();
  WorkerStepTiming moved;  // summed over this run's steps
  // The servers' push count after this worker's first and last push: every worker's steps in
  // between, for the job's samples/s whatever share of them this worker trained.
  uint64_t first_pushes = 0, last_pushes = 0;
  double epoch_loss = 0;
  int64_t epoch_steps = 0;
  std::optional<double> final_train_loss;
  // Sync: every worker trains `total` steps, in lockstep. Async and bounded staleness: the run is
  // the servers' total x workers pushes, whoever pushes them (TensorFlow's global step), so that a
  // fast worker takes the steps a straggler does not get to; a worker stops once its servers have
  // taken them all.
  // An elastic run's steps are the data set's batches, each worker's pushes counting toward them.
  const bool sync = place.consistency.isSync();
  const int budget_workers = elastic ? 1 : place.workers;
  const auto push_budget = static_cast<uint64_t>(total) * static_cast<uint64_t>(budget_workers);
  const int64_t last_step = sync ? total : total * budget_workers;
  const int64_t first_step = std::min(start_plan.step, last_step);
  int64_t next = first_step;  // this worker's clock: the step it trains next
  while (next < last_step) {
    const int64_t step = next;
    if (stopped(run)) {
      leaveAll();
      return core::cancelled(who + ": stopped (" + stopReason(run) + ") before step " +
                             std::to_string(step + 1));
    }
    const Clock::time_point step_start = Clock::now();
    auto loss = worker->step(step, batches);
    if (!loss.ok()) {
      // A server that went away may be one the same stop ended a moment earlier.
      const bool gone = loss.status().code() == core::Code::kUnavailable;
      if (stopped(run) || (gone && stopWithin(run, std::chrono::seconds(1))))
        return core::cancelled(who + ": stopped (" + stopReason(run) + ") in step " +
                               std::to_string(step + 1));
      return loss.status().withContext(who);
    }
    if (!std::isfinite(*loss))
      return core::invalidArgument(who + ": loss became " + std::to_string(*loss) + " at step " +
                                   std::to_string(step + 1) + " (learning rate " +
                                   std::to_string(run.settings.optimizer.learning_rate) +
                                   " too high?)");
    const int64_t epoch = step / per_epoch;
    if (step % per_epoch == 0) epoch_loss = 0, epoch_steps = 0;
    epoch_loss += *loss;
    ++epoch_steps;
    final_train_loss = epoch_loss / static_cast<double>(epoch_steps);
    const int64_t done = ++next;
    const WorkerStepTiming& last = worker->lastStep();
    const bool budget_taken = !sync && last.server_pushes >= push_budget;
    const bool run_ends = done == last_step || budget_taken;
    moved.pull_seconds += last.pull_seconds;
    moved.push_seconds += last.push_seconds;
    moved.bytes_pulled += last.bytes_pulled;
    moved.bytes_pushed += last.bytes_pushed;
    if (done == first_step + 1) first_pushes = last.server_pushes;
    last_pushes = last.server_pushes;
    if (trainer_metrics) {
      worker_metrics->observe(last);
      trainer_metrics->steps->Increment();
      trainer_metrics->samples->Increment(mp.batch);
      trainer_metrics->step_seconds->Observe(core::secondsSince(step_start));
      trainer_metrics->epoch->Set(static_cast<double>(epoch + 1));
      if (done % per_epoch == 0 || run_ends) trainer_metrics->loss->Set(*final_train_loss);
    }
    if (id == 0 && run.settings.log_every_steps > 0 && done % run.settings.log_every_steps == 0)
      RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << " step " << done << " loss " << *loss;
    if (id == 0 && run.settings.log_every_steps == 0 && (done % per_epoch == 0 || run_ends))
      RM_LOG(INFO, STEP) << "epoch " << epoch + 1 << ": " << epoch_steps << " steps, mean loss "
                         << *final_train_loss;
    if (budget_taken) break;
  }
  const double seconds = core::secondsSince(start);
  if (const int64_t steps = next - first_step; steps > 0) {
    RM_LOG(INFO, COMM) << who << ": " << steps << " steps in " << seconds << " s: pulled "
                       << moved.bytes_pulled << " bytes ("
                       << 1e3 * moved.pull_seconds / static_cast<double>(steps)
                       << " ms a step), pushed " << moved.bytes_pushed << " bytes ("
                       << 1e3 * moved.push_seconds / static_cast<double>(steps) << " ms a step)";
  }

  TrainSummary summary;
  if (resumed) summary.resumed_from_step = start_plan.step;
  summary.epochs = total / per_epoch;
  summary.steps = total;
  summary.world_size = place.workers;
  summary.backend = "ps-tcp";
  summary.device = "cpu";
  summary.precision = contract::name(run.settings.precision);
  summary.model_signature = mp.model->signature();
  summary.train_seconds = seconds;
  summary.final_train_loss = final_train_loss;
  if (last_pushes > first_pushes && seconds > 0)
    summary.samples_per_second =
        static_cast<double>(last_pushes - first_pushes + 1) * mp.batch / seconds;
  if (id == 0) {
    // The final parameters, as they stand at this worker's next step (which in sync waits for
    // every worker's last push).
    if (core::Status pulled = worker->pull(next, PullView::kAsStored); !pulled.ok()) {
      leaveAll();
      return pulled.withContext(who + ": pull the final parameters");
    }
    const data::Dataset& test = *run.test;
    const std::vector<uint32_t> idx = data::stridedIndices(test.size(), 0, 1);
    std::vector<float> x(static_cast<size_t>(mp.batch) * test.featureSize());
    std::vector<int32_t> y(static_cast<size_t>(mp.batch));
    double loss_sum = 0;
    int64_t correct = 0;
    for (size_t begin = 0; begin < idx.size(); begin += static_cast<size_t>(mp.batch)) {
      const int n = static_cast<int>(std::min<size_t>(mp.batch, idx.size() - begin));
      data::gatherBatch(test, idx.data() + begin, n, x.data(), y.data());
      correct += mp.model->evaluate(x.data(), y.data(), n, &loss_sum);
    }
    if (!idx.empty()) {
      summary.test_accuracy = static_cast<double>(correct) / static_cast<double>(idx.size());
      summary.test_loss = loss_sum / static_cast<double>(idx.size());
      if (trainer_metrics) trainer_metrics->accuracy->Set(*summary.test_accuracy);
    }
  }
  leaveAll();
  return summary;
}

}  // namespace ringmaster::trainer::ps
