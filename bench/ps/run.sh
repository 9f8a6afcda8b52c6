#!/usr/bin/env bash
# bench/ps: the parameter-server mode's accuracy and speed against its consistency, beside
# allreduce, on the Fashion-MNIST example (examples/trainer-fashion-mnist-mlp.yaml: the MLP
# 784-512-512-10, SGD lr 0.05 momentum 0.9 cosine; plain processes, no cluster).
# Each run is 1 server + 2 workers of ringmaster-trainer --ps-servers 1 (3 processes) with
# --ps-consistency sync, 1, 4, 16 and async, then 2 allreduce ranks (--backend tcp) training the
# same global batch; every run trains --epochs E (default 3) from the same seed and reports worker
# 0's (or rank 0's) test accuracy and samples/s, from its `done:` line.
#   bench/ps/run.sh [--epochs E] [--seed S]   (S: the trainer's seed, default its own)
# Needs build/bin/ringmaster-trainer (scripts/run-main builds it) and dataset-fashion-mnist.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
epochs=3
seed=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --epochs) epochs=$2; shift 2 ;;
    --seed) seed=(--seed "$2"); shift 2 ;;
    *) echo "usage: $0 [--epochs E] [--seed S]" >&2; exit 2 ;;
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

# run NAME WORLD REPORTING_RANK ARGS...: WORLD processes of the trainer; prints the reporting
# rank's accuracy and samples/s.
run() {
  local name=$1 world=$2 reporter=$3
  shift 3
  local port pids=() r
  port=$(free_port)
  for ((r = 0; r < world; r++)); do
    RANK=$r WORLD_SIZE=$world LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      RINGMASTER_JOB="bench-ps" "$trainer" --config "$config" --metrics-port -1 --epochs "$epochs" \
      --blas-threads 1 "${seed[@]}" "$@" \
      >"$tmp/$name.$r.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || { echo "bench/ps: $name failed:" >&2; cat "$tmp/$name".*.log >&2; exit 1; }; done
  local done_line
  done_line=$(grep -h "done:" "$tmp/$name.$reporter.log" | tail -1)
  local acc sps
  acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p' <<<"$done_line")
  sps=$(sed -n 's/.*, \([0-9]*\) samples\/s.*/\1/p' <<<"$done_line")
  printf '%-24s test accuracy %6s%%  %7s samples/s\n' "$name" "$acc" "$sps"
}

echo "bench/ps: $epochs epochs of the example's MLP 784-512-512-10, batch 128 per worker, $(getconf _NPROCESSORS_ONLN) cores"
for c in sync 1 4 16 async; do
  run "ps $c (1+2)" 3 0 --ps-servers 1 --ps-consistency "$c"
done
run "allreduce tcp (2)" 2 0 --backend tcp
