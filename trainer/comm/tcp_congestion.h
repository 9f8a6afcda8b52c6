#pragma once
// The congestion control the tcp transport asks for on its sockets: a loss-based one that does
// not pace. A collective is a burst between hosts microseconds apart; BBR, the default on some
// hosts, paces every flow at its bandwidth estimate and halved the ring from 512 KiB up (2
// ranks in network namespaces: 1.9 GB/s under BBR, 4.2 under CUBIC).
//
// Thread-safety: free functions on a caller's socket. Failure: none; a kernel that refuses
// every choice keeps its default, since this is tuning, not a requirement.

#include <string>

namespace ringmaster::trainer::comm {

// Sets CUBIC on `fd`, or Reno where the process may not choose CUBIC (a container's non-root
// user, when the host's net.ipv4.tcp_allowed_congestion_control leaves it out: Reno is always
// allowed). Call it before the connection exists: a socket that starts under BBR keeps pacing
// after a switch, so a listener carries the choice to the sockets it accepts, and a dialler
// sets it before connect. Returns the algorithm the socket now runs ("" if unknown).
std::string preferUnpacedCongestionControl(int fd);

}  // namespace ringmaster::trainer::comm
