#include "trainer/ps/server_checkpoint.h"

#include <sstream>
#include <vector>

#include "ringmaster/core/flags.h"
#include "ringmaster/core/log.h"
#include "trainer/pipeline/resume_plan.h"

namespace ringmaster::trainer::ps {
namespace {

using core::Result;
using core::Status;

std::string who(const ServerCheckpoints& where) {
  return "parameter server " + std::to_string(where.server) + " of " +
         std::to_string(where.servers);
}

std::string serverKey(const ServerCheckpoints& where, int server, const std::string& what) {
  return where.attempt_prefix + "/ps/server/" + std::to_string(server) + "/" + what;
}

Result<std::string> read(rendezvous::Store& store, const std::string& key,
                         const ServerCheckpoints& where) {
  auto value = store.get(key, where.timeout);
  if (!value.ok()) return value.status().withContext(who(where) + ": wait for " + key);
  return rendezvous::toString(*value);
}

// Every server writes this run's marker into its directory, and none goes on before all have:
// a server may only save once every directory says which run its files are of.
Status markRun(const ServerCheckpoints& where, rendezvous::Store& store, const std::string& dir) {
  const std::string run_key = where.attempt_prefix + "/ps/run";
  if (where.server == 0) {
    const uint64_t run = checkpoint::drawRunMarker();
    RM_RETURN_IF_ERROR_CTX(store.set(run_key, rendezvous::toBytes(std::to_string(run))),
                           who(where) + ": publish the run marker");
  }
  RM_ASSIGN_OR_RETURN(const std::string text, read(store, run_key, where));
  RM_ASSIGN_OR_RETURN(const int64_t run, core::parseInt(text));
  RM_RETURN_IF_ERROR_CTX(checkpoint::writeRunMarker(dir, static_cast<uint64_t>(run)), who(where));
  RM_RETURN_IF_ERROR_CTX(
      store.set(serverKey(where, where.server, "marked"), rendezvous::toBytes("1")), who(where));
  for (int s = 0; s < where.servers; ++s) {
    RM_RETURN_IF_ERROR(read(store, serverKey(where, s, "marked"), where).status());
  }
  return Status::Ok();
}

}  // namespace

std::string serverCheckpointDir(const std::string& path, int server, int servers) {
  return path + "/ps-server-" + std::to_string(server) + "-of-" + std::to_string(servers);
}

std::string serverSignature(const std::string& model_signature, int server, int servers,
                            size_t elements) {
  return "ps-server " + std::to_string(server) + "/" + std::to_string(servers) + " " +
         std::to_string(elements) + " of " + model_signature;
}

checkpoint::Checkpoint toCheckpoint(const ServerSnapshot& snapshot, const std::string& signature,
                                    const std::string& optimizer_type) {
  checkpoint::Checkpoint ck;
  ck.step = snapshot.step;
  ck.model_signature = signature;
  ck.params = snapshot.values;
  ck.optimizer_type = optimizer_type;
  ck.optimizer_step = snapshot.optimizer_step;
  ck.optimizer_state = snapshot.optimizer_state;
  return ck;
}

ServerSnapshot fromCheckpoint(const checkpoint::Checkpoint& ck) {
  ServerSnapshot snapshot;
  snapshot.step = ck.step;
  snapshot.values = ck.params;
  snapshot.optimizer_step = ck.optimizer_step;
  snapshot.optimizer_state = ck.optimizer_state;
  return snapshot;
}

Result<std::optional<ServerSnapshot>> agreeOnResume(const ServerCheckpoints& where,
                                                    rendezvous::Store& store) {
  const std::string dir = serverCheckpointDir(where.path, where.server, where.servers);
  RM_ASSIGN_OR_RETURN(std::optional<checkpoint::Checkpoint> newest,
                      checkpoint::loadNewestCheckpoint(dir, where.signature));
  RM_ASSIGN_OR_RETURN(const std::optional<uint64_t> run, checkpoint::readRunMarker(dir));
  if (newest && newest->optimizer_type != where.optimizer_type) {
    return core::invalidArgument(who(where) + ": checkpoint " + dir + " step " +
                                 std::to_string(newest->step) + " holds optimizer '" +
                                 newest->optimizer_type + "' state, the run uses '" +
                                 where.optimizer_type + "'");
  }
  // "<newest step or -1> <run marker or 0>", read back by every server.
  const std::string mine =
      std::to_string(newest ? newest->step : -1) + " " + std::to_string(run.value_or(0));
  RM_RETURN_IF_ERROR_CTX(
      store.set(serverKey(where, where.server, "checkpoint"), rendezvous::toBytes(mine)),
      who(where) + ": publish its newest checkpoint");
  std::vector<pipeline::StageCheckpoints> servers;
  for (int s = 0; s < where.servers; ++s) {
    RM_ASSIGN_OR_RETURN(const std::string text,
                        read(store, serverKey(where, s, "checkpoint"), where));
    std::istringstream in(text);
    int64_t step = -1;
    uint64_t marker = 0;
    if (!(in >> step >> marker)) {
      return core::invalidArgument(who(where) + ": server " + std::to_string(s) + " published '" +
                                   text + "' as its newest checkpoint");
    }
    pipeline::StageCheckpoints c;
    c.name = "parameter server " + std::to_string(s);
    if (step >= 0) c.newest_step = step;
    if (marker != 0) c.run = marker;
    servers.push_back(std::move(c));
  }
  RM_ASSIGN_OR_RETURN(const pipeline::ResumePlan plan, pipeline::planResume(servers, where.path));
  switch (plan.action) {
    case pipeline::ResumeAction::kStartOver:
      RM_LOG(WARN, CKPT) << who(where) << ": " << plan.without
                         << " never saved a checkpoint of this run (another holds step "
                         << plan.others_newest << "): starting over from step 0";
      if (newest) RM_RETURN_IF_ERROR_CTX(checkpoint::removeCheckpoints(dir), who(where));
      RM_RETURN_IF_ERROR(markRun(where, store, dir));
      return std::optional<ServerSnapshot>();
    case pipeline::ResumeAction::kStartFresh:
      RM_RETURN_IF_ERROR(markRun(where, store, dir));
      return std::optional<ServerSnapshot>();
    case pipeline::ResumeAction::kResume:
      break;
  }
  if (newest->step != plan.step) {
    // Another server did not finish writing the newest step: back to the last one all hold.
    RM_ASSIGN_OR_RETURN(newest, checkpoint::readCheckpointFile(
                                    dir + "/" + checkpoint::checkpointFileName(plan.step)));
    if (newest->model_signature != where.signature) {
      return core::invalidArgument(who(where) + ": checkpoint " + dir + " step " +
                                   std::to_string(plan.step) + " was written for '" +
                                   newest->model_signature + "', not '" + where.signature + "'");
    }
  }
  RM_LOG(INFO, CKPT) << who(where) << ": resuming from its checkpoint at step " << plan.step
                     << ", the newest every server holds (" << dir << ")";
  return std::optional<ServerSnapshot>(fromCheckpoint(*newest));
}

Status writeSnapshot(const ServerCheckpoints& where, const ServerSnapshot& snapshot) {
  const std::string dir = serverCheckpointDir(where.path, where.server, where.servers);
  return checkpoint::writeCheckpoint(
             dir, toCheckpoint(snapshot, where.signature, where.optimizer_type), where.keep)
      .withContext(who(where) + ": checkpoint at step " + std::to_string(snapshot.step));
}

}  // namespace ringmaster::trainer::ps
