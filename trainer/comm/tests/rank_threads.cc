#include "trainer/comm/tests/rank_threads.h"

#include <gtest/gtest.h>

#include <optional>

#include "trainer/comm/gloo_communicator.h"
#include "trainer/comm/inproc_communicator.h"
#include "trainer/comm/shm_communicator.h"
#include "trainer/comm/tcp_communicator.h"
#include "trainer/comm/tests/nccl_model.h"

namespace ringmaster::trainer::comm::testing {

std::vector<std::string> allBackends() { return {"inproc", "gloo", "shm", "shm-tiny", "tcp"}; }

std::vector<core::Result<std::unique_ptr<Communicator>>> tryMakeCommunicators(
    const std::string& backend, int n, rendezvous::Store* store, std::chrono::milliseconds timeout,
    const std::vector<int>& ranks) {
  std::vector<std::optional<core::Result<std::unique_ptr<Communicator>>>> slots(ranks.size());
  std::shared_ptr<InProcGroup> group;
  if (backend == "inproc") group = std::make_shared<InProcGroup>(n, timeout);
  runRanks(static_cast<int>(ranks.size()), [&](int i) {
    const int rank = ranks[i];
    auto wrap = [](auto result) -> core::Result<std::unique_ptr<Communicator>> {
      if (!result.ok()) return result.status();
      return std::unique_ptr<Communicator>(std::move(result).value());
    };
    if (backend == "inproc") {
      slots[i] = std::unique_ptr<Communicator>(std::make_unique<InProcCommunicator>(group, rank));
    } else if (backend == "gloo") {
      GlooConfig config;
      config.rank = rank;
      config.size = n;
      config.store = store;
      config.hostname = "127.0.0.1";
      config.timeout = timeout;
      slots[i] = wrap(GlooCommunicator::create(config));
    } else if (backend == "shm" || backend == "shm-tiny" || backend == "shm-no-rings") {
      ShmConfig config;
      config.rank = rank;
      config.size = n;
      config.store = store;
      config.timeout = timeout;
      // Point-to-point rings as pipelines get them; tiny ones wrap inside every message.
      config.ring_bytes = backend == "shm-no-rings" ? 0 : defaultShmRingBytes(n);
      if (backend == "shm-tiny") {
        config.slot_bytes = 4096;
        config.direct_max_bytes = 0;
        config.ring_bytes = 4096;
      }
      slots[i] = wrap(ShmCommunicator::create(config));
    } else if (backend == "tcp") {
      TcpConfig config;
      config.rank = rank;
      config.size = n;
      config.store = store;
      config.hostname = "127.0.0.1";
      config.timeout = timeout;
      slots[i] = wrap(TcpCommunicator::create(config));
    } else {
      slots[i] = core::invalidArgument("unknown test backend " + backend);
    }
  });
  std::vector<core::Result<std::unique_ptr<Communicator>>> out;
  for (auto& s : slots) out.push_back(std::move(*s));
  return out;
}

std::vector<std::unique_ptr<Communicator>> makeCommunicators(const std::string& backend, int n,
                                                             std::chrono::milliseconds timeout) {
  if (backend == "nccl-model") return makeNcclModelCommunicators(n, timeout);
  auto store = rendezvous::makeInMemoryStore();
  std::vector<int> ranks(n);
  for (int r = 0; r < n; ++r) ranks[r] = r;
  auto results = tryMakeCommunicators(backend, n, store.get(), timeout, ranks);
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) {
    if (!results[r].ok()) {
      ADD_FAILURE() << backend << " rank " << r << ": " << results[r].status().message();
      return {};
    }
    out.push_back(std::move(results[r]).value());
  }
  return out;
}

}  // namespace ringmaster::trainer::comm::testing
