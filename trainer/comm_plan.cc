#include "trainer/comm_plan.h"

namespace ringmaster::trainer {

comm::CommConfig worldCommConfig(const contract::RankEnvironment& world,
                                 const TrainerConfig& config, bool cuda,
                                 std::chrono::seconds rendezvous_timeout) {
  comm::CommConfig c;
  c.backend = config.backend;
  c.device = cuda ? "cuda" : "cpu";
  c.collective_timeout = std::chrono::seconds(config.settings.comm_timeout_seconds);
  c.rank = world.rank;
  c.world_size = world.world_size;
  c.master_addr = world.master_addr;
  c.master_port = world.store_port;
  c.store_secret = world.store_secret;
  c.key_prefix = world.attemptPrefix() + "/trainer";
  c.host_store = !world.use_agent_store;
  c.host = world.pod_ip;
  c.timeout = rendezvous_timeout;
  c.point_to_point = config.settings.pipeline.stages > 1;  // stages send to their neighbours
  c.tcp_doubling_max_bytes = static_cast<size_t>(config.settings.tcp_doubling_max_kb * 1024);
  return c;
}

comm::CommConfig groupCommConfig(const comm::CommConfig& world, const std::string& name, int rank,
                                 int size) {
  comm::CommConfig group = world;
  group.rank = rank;
  group.world_size = size;
  group.key_prefix = world.key_prefix + "/" + name;
  group.host_store = false;  // the world's communicator (or the launcher) hosts it already
  group.point_to_point = false;
  return group;
}

}  // namespace ringmaster::trainer
