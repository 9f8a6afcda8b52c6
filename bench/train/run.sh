#!/usr/bin/env bash
# bench/train: ringmaster-trainer vs PyTorch DDP (gloo), side by side in one run.
# Same MLP 784-512-512-10, same Fashion-MNIST, same schedule, batch 128 per rank, 2 ranks with
# one thread each. Prints samples/s and test accuracy of both and `ratio` lines.
#   bench/train/run.sh [--repeats N] [--epochs E] [--backend auto|tcp|gloo|shm|mpi]
#                      [--netns RATE]
#   bench/train/run.sh --gpu [gpu.sh's options]   the GPU comparison instead (bench/train/gpu.sh)
# --netns RATE: across "pods": each rank in its own network namespace with a link of RATE each
# way (e.g. 10gbit; "none": unshaped), so both go over TCP (ours with --backend tcp unless told
# otherwise: shared memory would still reach across namespaces). Needs root (bench/lib/netns.sh).
# Needs an optimized build in build/ (scripts/run-main or scripts/build build -DCMAKE_BUILD_TYPE=Release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ ${1:-} == --gpu ]]; then
  shift
  exec bash "$root/bench/train/gpu.sh" "$@"
fi
repeats=3 epochs=5 backend="" netns=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --netns) netns=$2; shift 2 ;;
    *) echo "usage: $0 [--repeats N] [--epochs E] [--backend B] [--netns RATE]" >&2; exit 2 ;;
  esac
done
[[ -n $backend ]] || backend=$([[ -n $netns ]] && echo tcp || echo auto)
trainer=${RM_TRAINER:-$root/build/bin/ringmaster-trainer}
[[ -x $trainer ]] || { echo "bench/train: $trainer not built (run scripts/run-main first)" >&2; exit 1; }
python=/usr/bin/python3  # Debian's torch imports only there
"$python" -c 'import torch' 2>/dev/null || { echo "bench/train: python3-torch missing (scripts/setup)" >&2; exit 1; }
dpkg-query -W -f='${Status}' libopenblas0-openmp 2>/dev/null | grep -q 'ok installed' ||
  echo "bench/train: warning: libopenblas0-openmp missing; PyTorch will be ~20x slower" >&2
# shellcheck source=../lib/blas.sh
source "$root/bench/lib/blas.sh"
# shellcheck source=../lib/port.sh
source "$root/bench/lib/port.sh"
same_blas_kernels "$trainer" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--epochs "$epochs" --batch-size 128 --lr 0.05 --momentum 0.9)
master=127.0.0.1
# on_rank <rank> cmd...: where rank <rank> runs (its namespace with --netns), with POD_IP set to
# the address it listens at.
on_rank() { local rank=$1; shift; POD_IP=$master "$@"; }
if [[ -n $netns ]]; then
  # shellcheck source=../lib/netns.sh
  source "$root/bench/lib/netns.sh"
  netns_check || exit 2
  trap 'netns_destroy; rm -rf "$tmp"' EXIT
  netns_create 2
  netns_shape "$netns"
  master=$(netns_addr 0)
  on_rank() {
    local rank=$1; shift
    netns_exec "$rank" env POD_IP="$(netns_addr "$rank")" GLOO_SOCKET_IFNAME=eth0 "$@"
  }
fi

run_ours() {  # -> prints the summary JSON
  local port pids=()
  port=$(free_port "$python")
  for rank in 1 0; do
    on_rank "$rank" env RANK=$rank WORLD_SIZE=2 MASTER_ADDR="$master" MASTER_PORT=$port \
      OMP_NUM_THREADS=1 RINGMASTER_LOG_LEVEL=warn "$trainer" --model mlp --hidden 512,512 \
      "${common[@]}" --backend "$backend" --summary-json "$tmp/ours$rank.json" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$tmp/ours0.json"
}
run_torch() {
  local port pids=()
  port=$(free_port "$python")
  for rank in 1 0; do
    on_rank "$rank" env RANK=$rank WORLD_SIZE=2 MASTER_ADDR="$master" MASTER_PORT=$port \
      OMP_NUM_THREADS=1 "$python" "$root/bench/train/torch_ddp.py" "${common[@]}" \
      > "$tmp/torch$rank.json" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$tmp/torch0.json"
}
field() { "$python" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }

printf '%-6s %-28s %12s %10s\n' run who samples/s accuracy
for i in $(seq 1 "$repeats"); do
  run_ours > "$tmp/o$i.json"
  printf '%-6s %-28s %12.0f %10.4f\n' "$i" "ringmaster ($(field "$tmp/o$i.json" backend))" \
    "$(field "$tmp/o$i.json" samplesPerSecond)" "$(field "$tmp/o$i.json" testAccuracy)"
  run_torch > "$tmp/t$i.json"
  printf '%-6s %-28s %12.0f %10.4f\n' "$i" "pytorch ddp (gloo)" \
    "$(field "$tmp/t$i.json" samplesPerSecond)" "$(field "$tmp/t$i.json" testAccuracy)"
done
"$python" - "$tmp" "$repeats" <<'PY'
import json, statistics, sys
tmp, n = sys.argv[1], int(sys.argv[2])
ours = [json.load(open(f"{tmp}/o{i}.json")) for i in range(1, n + 1)]
torch = [json.load(open(f"{tmp}/t{i}.json")) for i in range(1, n + 1)]
med = lambda xs, k: statistics.median(x[k] for x in xs)
o_sps, t_sps = med(ours, "samplesPerSecond"), med(torch, "samplesPerSecond")
o_acc, t_acc = med(ours, "testAccuracy"), med(torch, "testAccuracy")
print(f"median  ringmaster {o_sps:.0f} samples/s, accuracy {o_acc:.4f}")
print(f"median  pytorch    {t_sps:.0f} samples/s, accuracy {t_acc:.4f}")
print(f"ratio samples/s ringmaster/pytorch-ddp: {o_sps / t_sps:.2f}")
print(f"ratio accuracy  ringmaster/pytorch-ddp: {o_acc / t_acc:.4f}")
PY
