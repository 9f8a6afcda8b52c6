#!/usr/bin/env bash
# bench/ps: the parameter-server mode's accuracy and speed against its consistency, beside
# allreduce, on the Fashion-MNIST example (examples/trainer-fashion-mnist-mlp.yaml: the MLP
# 784-512-512-10, SGD lr 0.05 momentum 0.9 cosine; plain processes, no cluster).
# Each run is 1 server + 2 workers of ringmaster-trainer --ps-servers 1 (3 processes) with
# --ps-consistency sync, 1, 4, 16 and async, then 2 allreduce ranks (--backend tcp) training the
# same global batch; every run trains --epochs E (default 3) from the same seed and reports worker
# 0's (or rank 0's) test accuracy from its `done:` line; the job's samples/s: every worker's
# samples over the slowest worker's training time (allreduce: rank 0's figure, its ranks step
# together); and worker 0's bytes and time per step pulling and pushing.
#   bench/ps/run.sh [--epochs E] [--seed S] [--straggler] [--peer] [--modes "sync 4 async"]
#                   [--flags "--lr 0.1 --momentum 0.8"]
#     --seed S     the trainer's seed (default its own)
#     --straggler  worker 1 (rank 1) runs at half speed: stopped and continued every 20 ms
#                  (SIGSTOP/SIGCONT), so that it gets half the wall time of the others
#     --peer       also PyTorch's parameter server over torch.distributed.rpc (torch_ps.py, as
#                  PyTorch's RPC tutorials write one), sync and async, with the same straggler
#     --modes      the consistencies to run (default "sync 1 4 16 async")
#     --flags      more ringmaster-trainer flags for every run of ours (after the example's)
# Needs build/bin/ringmaster-trainer (scripts/run-main builds it) and dataset-fashion-mnist.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=3
seed=()
straggler=0
peer=0
modes="sync 1 4 16 async"
flags=()
usage="usage: $0 [--epochs E] [--seed S] [--straggler] [--peer] [--modes \"sync 4 async\"] [--flags \"...\"]"
while [[ $# -gt 0 ]]; do
  case $1 in
    --epochs) epochs=$2; shift 2 ;;
    --seed) seed=(--seed "$2"); shift 2 ;;
    --straggler) straggler=1; shift ;;
    --peer) peer=1; shift ;;
    --modes) modes=$2; shift 2 ;;
    --flags) read -r -a flags <<<"$2"; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
trainer=${RM_BUILD_DIR:-$root/build}/bin/ringmaster-trainer
[[ -x $trainer ]] || { echo "bench/ps: $trainer not built (scripts/run-main)" >&2; exit 1; }
# The example's optimizer: the flags' defaults (lr 0.1, constant) end on a noisy iterate.
config=$root/examples/trainer-fashion-mnist-mlp.yaml
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
export OMP_NUM_THREADS=1

# Half the wall time for process $1 while it runs: stopped, then continued, every 20 ms.
straggle() {
  while kill -STOP "$1" 2>/dev/null; do
    sleep 0.02
    kill -CONT "$1" 2>/dev/null || break
    sleep 0.02
  done
}

# wait_all NAME PID...: waits for the processes (and their stragglers); exits with their logs on
# a failure.
wait_all() {
  local name=$1 p
  shift
  for p in "$@"; do wait "$p" || { echo "bench/ps: $name failed:" >&2; cat "$tmp/$name".*.log >&2; exit 1; }; done
}

# run NAME WORLD REPORTING_RANK ARGS...: WORLD processes of the trainer; prints the reporting
# rank's accuracy and samples/s, and what it pulled and pushed.
run() {
  local name=$1 world=$2 reporter=$3
  shift 3
  local port pids=() r
  port=$(free_port)
  for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      RINGMASTER_JOB="bench-ps" "$trainer" --config "$config" --metrics-port -1 --epochs "$epochs" \
      --blas-threads 1 "${seed[@]}" "${flags[@]}" "$@" \
      >"$tmp/$name.$r.log" 2>&1 &
    pids+=($!)
    if [[ $straggler == 1 && $r == 1 ]]; then straggle "$!" & fi
  done
  wait_all "$name" "${pids[@]}"
  local done_line moved
  done_line=$(grep -h "done:" "$tmp/$name.$reporter.log" | tail -1)
  moved=$(sed -n 's/.*steps in [0-9.e+-]* s: pulled \([0-9]*\) bytes (\([0-9.]*\) ms a step), pushed \([0-9]*\) bytes (\([0-9.]*\) ms a step).*/pull \2 ms, push \4 ms a step; \1 + \3 bytes/p' \
    "$tmp/$name.$reporter.log" | tail -1)
  local acc sps
  acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$done_line")
  sps=$(sed -n 's/.*, \([0-9]*\) samples\/s.*/\1/p' <<<"$done_line")
  # Parameter-server workers: every worker's "ps worker W: N steps in T s" line.
  local workers
  workers=$(cat "$tmp/$name".*.log | sed -n 's/.*ps worker [0-9]*: \([0-9]*\) steps in \([0-9.e+-]*\) s:.*/\1 \2/p')
  if [[ -n $workers ]]; then
    sps=$(awk -v batch=128 '{ n += $1; if ($2 > t) t = $2 } END { printf "%.0f", n * batch / t }' <<<"$workers")
  fi
  printf '%-24s test accuracy %6s%%  %7s samples/s  %s\n' "$name" "$acc" "$sps" "$moved"
}

# torch_run NAME CONSISTENCY: PyTorch's RPC parameter server, 1 server + 2 trainers.
torch_run() {
  local name=$1 consistency=$2 port pids=() r
  port=$(free_port)
  for ((r = 0; r < 3; r++)); do
    RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      /usr/bin/python3 "$root/bench/ps/torch_ps.py" --epochs "$epochs" --consistency "$consistency" \
      >"$tmp/$name.$r.log" 2>&1 &
    pids+=($!)
    if [[ $straggler == 1 && $r == 1 ]]; then straggle "$!" & fi
  done
  wait_all "$name" "${pids[@]}"
  python3 - "$name" "$tmp/$name.0.log" <<'PY'
import json, sys
line = [l for l in open(sys.argv[2]) if l.startswith("{")][-1]
r = json.loads(line)
steps = r["steps"]
print("%-24s test accuracy %6.2f%%  %7.0f samples/s  push+pull %.3f ms a step; %d + %d bytes"
      % (sys.argv[1], 100 * r["testAccuracy"], r["samplesPerSecond"],
         1e3 * r["pushSeconds"] / steps, r["bytesPulled"], r["bytesPushed"]))
PY
}

echo "bench/ps: $epochs epochs of the example's MLP 784-512-512-10, batch 128 per worker, $(getconf _NPROCESSORS_ONLN) cores$([[ $straggler == 1 ]] && echo ", worker 1 at half speed")"
for c in $modes; do
  run "ps $c (1+2)" 3 0 --ps-servers 1 --ps-consistency "$c"
done
run "allreduce tcp (2)" 2 0 --backend tcp
if [[ $peer == 1 ]]; then
  torch_run "torch rpc ps sync (1+2)" sync
  torch_run "torch rpc ps async (1+2)" async
fi
