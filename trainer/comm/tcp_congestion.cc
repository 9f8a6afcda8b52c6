#include "trainer/comm/tcp_congestion.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "ringmaster/core/log.h"

namespace ringmaster::trainer::comm {

std::string preferUnpacedCongestionControl(int fd) {
  int refused = 0;
  for (const char* name : {"cubic", "reno"}) {
    if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, std::strlen(name)) == 0) break;
    if (refused == 0) refused = errno;
  }
  char now[32] = {};
  socklen_t len = sizeof(now) - 1;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, now, &len) != 0) return "";
  const std::string chosen(now);
  if (refused != 0) {
    static std::once_flag logged;
    std::call_once(logged, [&] {
      RM_LOG(INFO, COMM) << "tcp: cubic refused (" << std::strerror(refused)
                         << "); connections run " << chosen;
    });
  }
  return chosen;
}

}  // namespace ringmaster::trainer::comm
