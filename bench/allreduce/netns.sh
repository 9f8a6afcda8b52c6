#!/usr/bin/env bash
# Allreduce across "hosts" on one machine: every rank in its own network namespace, each with one
# veth link into a shared bridge, every link shaped by tc (a token bucket on both ends, so each
# rank has RATE in each direction, like a full-duplex NIC). Ours (tcp) against Open MPI's TCP BTL
# and raw Gloo, side by side on the same links, for each world size and link rate.
#
#   bench/allreduce/netns.sh [path/to/bench_allreduce]
#
# Environment: WORLDS (default "2 4 8"), RATES (tc rates, default "10gbit 25gbit"; "none": no
# shaping), ONLY (subset of: ours-tcp mpi-tcp gloo-raw), ROUNDS (default 2), REPEATS (default 3),
# MIN_BYTES, MAX_BYTES, FACTOR (default 4 KiB..64 MiB x4).
#
# Needs root, ip and tc. The namespaces, veths and the bridge (bench/lib/netns.sh) are created
# here and removed on exit; the bridge's own address exists only so that mpirun's daemons
# (launched into the namespaces through an rsh agent) can call back. Traffic between ranks never
# leaves the bridge. Limits of this machine: netem (added latency, loss) is not available, so
# links differ from real ones in bandwidth only, with loopback-like latency; and ranks share the
# machine's cores (rank i is pinned to core i mod nproc), so with more ranks than cores the
# figures measure CPU as much as links.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-${BENCH_BIN:-$here/../../build/bench/allreduce/bench_allreduce}}
bin=$(readlink -f "$bin")
worlds=${WORLDS:-"2 4 8"}
rates=${RATES:-"10gbit 25gbit"}
impls=${ONLY:-"ours-tcp mpi-tcp gloo-raw"}
rounds=${ROUNDS:-2}
common=(--min-bytes "${MIN_BYTES:-4096}" --max-bytes "${MAX_BYTES:-67108864}"
        --factor "${FACTOR:-4}" --repeats "${REPEATS:-3}")

die() { echo "netns.sh: $*" >&2; exit 2; }
[[ -x $bin ]] || die "no bench_allreduce at $bin (build target bench_allreduce, or pass its path)"
# shellcheck source=../lib/netns.sh
source "$here/../lib/netns.sh"
netns_check || die "cannot build namespaces"
max_world=0
for w in $worlds; do ((w > max_world)) && max_world=$w; done
((max_world >= 2 && max_world <= 200)) || die "WORLDS must be between 2 and 200"
work=$(mktemp -d)
trap 'netns_destroy; rm -rf "$work"' EXIT
netns_create "$max_world"

# Open MPI's rsh agent: runs a daemon's command in the namespace named as its host, on the core
# the rank there would get.
agent=$work/ns-agent
cat >"$agent" <<EOF
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
core=\$(( \${host##*-} % $(nproc) ))
exec taskset -c "\$core" ip netns exec "\$host" sh -c "\$*"
EOF
chmod +x "$agent"

port=29800
run_ours() {  # run_ours <impl> <world>: every rank in its namespace, rank 0's results kept
  local impl=$1 world=$2 i pids=() rc=0
  port=$((port + 1))
  local store=$work/store-$port
  mkdir -p "$store"
  for ((i = world - 1; i >= 0; i--)); do
    netns_exec "$i" timeout 300 env RANK=$i WORLD_SIZE=$world MASTER_ADDR="$(netns_addr 0)" \
      MASTER_PORT=$port BENCH_HOST="$(netns_addr "$i")" \
      RINGMASTER_LOG_LEVEL=warn "$bin" --impl "$impl" --store-dir "$store" "${common[@]}" \
      >"$work/out$i" 2>"$work/err$i" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=$?; done
  if ((rc != 0)); then
    echo "  $impl failed (exit $rc): $(cat "$work"/err* | tail -3)" >&2
    return 0
  fi
  grep '^RESULT' "$work/out0" || true
}

run_mpi() {  # run_mpi <world>
  local world=$1 i
  command -v mpirun >/dev/null || { echo "  mpi-tcp skipped: no mpirun" >&2; return 0; }
  : >"$work/hosts"
  for ((i = 0; i < world; i++)); do echo "$(netns_name "$i") slots=1" >>"$work/hosts"; done
  local yield=()
  ((world > $(nproc))) && yield=(--mca mpi_yield_when_idle 1)  # MPI's setting for shared cores
  # mpirun's daemons now and then fail to wire up among many namespaces ("no-path"): one retry.
  local try
  for try in 1 2; do
    if timeout 300 mpirun --allow-run-as-root -np "$world" --hostfile "$work/hosts" \
      --bind-to none --mca routed direct --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include "$NETNS_NET.0/24" \
      --mca btl_tcp_if_include "$NETNS_NET.0/24" --mca pml ob1 --mca btl tcp,self "${yield[@]}" \
      "$bin" --impl mpi --label mpi-tcp "${common[@]}" >"$work/mpi.out" 2>"$work/mpi.err"; then
      grep '^RESULT' "$work/mpi.out" || true
      return 0
    fi
    echo "  mpi-tcp failed (try $try): $(grep -v -e '^---' -e '^\[.*PMIX' "$work/mpi.err" | tail -3)" >&2
  done
}

start=$(date +%s)
for rate in $rates; do
  netns_shape "$rate"
  for world in $worlds; do
    results=$work/results-$world-$rate
    : >"$results"
    for ((round = 1; round <= rounds; round++)); do
      for impl in $impls; do
        echo "$world ranks, link $rate, round $round/$rounds: $impl" >&2
        case $impl in
          ours-tcp | gloo-raw) run_ours "$impl" "$world" >>"$results" ;;
          mpi-tcp) run_mpi "$world" >>"$results" ;;
          *) die "unknown implementation $impl" ;;
        esac
      done
    done
    link=0
    [[ $rate != none ]] && link=$(awk -v b="$(netns_bits "$rate")" 'BEGIN { print b / 8 / 1e9 }')
    echo
    awk -v title="bus bandwidth, GB/s ($world ranks in namespaces, link $rate each way)" \
      -v impls="$impls" -v pairs="ours-tcp/mpi-tcp ours-tcp/gloo-raw" -v link="$link" \
      -f "$here/summarize.awk" "$results"
  done
done
echo "($(($(date +%s) - start)) s, $rounds rounds, median of ${REPEATS:-3} batches per size)" >&2
