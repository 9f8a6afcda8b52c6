# Network namespaces joined by one bridge: "hosts" on one machine for benchmarks. Source it.
#
#   netns_create N        namespaces 0..N-1, each with eth0 (a veth into the bridge) at
#                         $(netns_addr i); the bridge itself at $NETNS_NET.254
#   netns_shape RATE      a token bucket of RATE (e.g. 10gbit) on both ends of every link, so
#                         each namespace has RATE each way like a full-duplex NIC; "none": off
#   netns_exec i CMD...   CMD inside namespace i, pinned to core i mod nproc
#   netns_destroy         removes all of it (put it in the caller's EXIT trap)
#
# Names carry this shell's PID, so that two runs (or a leftover) never collide. Needs root, ip
# and tc. netem (added latency, loss) is not available on every kernel, so links differ from
# real ones in bandwidth only.

NETNS_TAG=$(($$ % 10000))
NETNS_NET=10.78.$(($$ % 250))
NETNS_BRIDGE=rmbr$NETNS_TAG
NETNS_COUNT=0

netns_check() {
  ((EUID == 0)) || { echo "needs root (network namespaces, veth, tc)" >&2; return 2; }
  command -v ip >/dev/null && command -v tc >/dev/null ||
    { echo "needs ip and tc (iproute2)" >&2; return 2; }
}
netns_name() { echo "rmbench$NETNS_TAG-$1"; }
netns_addr() { echo "$NETNS_NET.$(($1 + 1))"; }

netns_create() {
  local n=$1 i
  ip link add "$NETNS_BRIDGE" type bridge
  ip link set "$NETNS_BRIDGE" up
  ip addr add "$NETNS_NET.254/24" dev "$NETNS_BRIDGE"
  for ((i = 0; i < n; i++)); do
    ip netns add "$(netns_name "$i")"
    NETNS_COUNT=$((i + 1))
    ip link add "rmv$NETNS_TAG-$i" type veth peer name eth0 netns "$(netns_name "$i")"
    ip link set "rmv$NETNS_TAG-$i" master "$NETNS_BRIDGE" up
    ip -n "$(netns_name "$i")" addr add "$(netns_addr "$i")/24" dev eth0
    ip -n "$(netns_name "$i")" link set eth0 up
    ip -n "$(netns_name "$i")" link set lo up
  done
}

# netns_bits 25gbit -> 25000000000
netns_bits() {
  local v=${1,,}
  case $v in
    *gbit) echo $((${v%gbit} * 1000000000)) ;;
    *mbit) echo $((${v%mbit} * 1000000)) ;;
    *) echo "rate $1: use Ngbit or Nmbit" >&2; return 2 ;;
  esac
}

netns_shape() {
  local rate=$1 i bits burst
  for ((i = 0; i < NETNS_COUNT; i++)); do
    tc qdisc del dev "rmv$NETNS_TAG-$i" root 2>/dev/null || true
    ip netns exec "$(netns_name "$i")" tc qdisc del dev eth0 root 2>/dev/null || true
    [[ $rate == none ]] && continue
    bits=$(netns_bits "$rate")
    burst=$((bits / 8 / 1000 > 262144 ? bits / 8 / 1000 : 262144))  # 1 ms of traffic
    tc qdisc add dev "rmv$NETNS_TAG-$i" root tbf rate "$rate" burst "$burst" latency 10ms
    ip netns exec "$(netns_name "$i")" tc qdisc add dev eth0 root tbf rate "$rate" \
      burst "$burst" latency 10ms
  done
}

netns_exec() {
  local i=$1
  shift
  taskset -c $((i % $(nproc))) ip netns exec "$(netns_name "$i")" "$@"
}

netns_destroy() {
  local i
  for ((i = 0; i < NETNS_COUNT; i++)); do ip netns del "$(netns_name "$i")" 2>/dev/null || true; done
  ip link del "$NETNS_BRIDGE" 2>/dev/null || true
}
