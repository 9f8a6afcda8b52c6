#!/usr/bin/env bash
# bench/train: ringmaster-trainer vs PyTorch DDP (gloo), side by side in one run.
# Same MLP 784-512-512-10, same Fashion-MNIST, same schedule, batch 128 per rank, 2 ranks with
# one thread each. Prints samples/s, test accuracy and time to 87% and 88% test accuracy (the
# training time until the first epoch that reached it; both evaluate after every epoch, untimed)
# of both, and `ratio` lines. Run i uses seed i on both sides: one seed's accuracy after a few
# epochs of a constant learning rate is noise (seed 42 once gave ours 85.91% beside DDP's 87.18%;
# seeds 1-4 gave ours 86.75-87.58% and DDP 86.54-87.35%), so compare medians over seeds.
#   bench/train/run.sh [--repeats N] [--epochs E] [--backend auto|tcp|gloo|shm|mpi]
#                      [--netns RATE] [--lr-schedule constant|cosine]
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
repeats=3 epochs=5 backend="" netns="" schedule=constant
while [[ $# -gt 0 ]]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    --netns) netns=$2; shift 2 ;;
    --lr-schedule) schedule=$2; shift 2 ;;
    *) echo "usage: $0 [--repeats N] [--epochs E] [--backend B] [--netns RATE]" \
         "[--lr-schedule constant|cosine]" >&2; exit 2 ;;
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
common=(--epochs "$epochs" --batch-size 128 --lr 0.05 --momentum 0.9 --lr-schedule "$schedule")
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

run_ours() {  # <seed> <rank 0's log> -> prints the summary JSON
  local port pids=()
  port=$(free_port "$python")
  for rank in 1 0; do
    # Rank 0 logs each epoch's test accuracy and training time (level info).
    on_rank "$rank" env RANK=$rank WORLD_SIZE=2 MASTER_ADDR="$master" MASTER_PORT=$port \
      OMP_NUM_THREADS=1 RINGMASTER_LOG_LEVEL="$([[ $rank == 0 ]] && echo info || echo warn)" \
      "$trainer" --model mlp --hidden 512,512 "${common[@]}" --seed "$1" --backend "$backend" \
      --summary-json "$tmp/ours$rank.json" >"$tmp/ours$rank.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cp "$tmp/ours0.log" "$2"
  cat "$tmp/ours0.json"
}
run_torch() {  # <seed> -> prints the summary JSON
  local port pids=()
  port=$(free_port "$python")
  for rank in 1 0; do
    on_rank "$rank" env RANK=$rank WORLD_SIZE=2 MASTER_ADDR="$master" MASTER_PORT=$port \
      OMP_NUM_THREADS=1 "$python" "$root/bench/train/torch_ddp.py" "${common[@]}" --seed "$1" \
      > "$tmp/torch$rank.json" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$tmp/torch0.json"
}
# Every epoch's (test accuracy, training time so far) of a run: from rank 0's log for ours
# ("epoch k/N: ..., test accuracy 85.36% ..., 235 steps in 1.30 s"), from the JSON for DDP.
# One run's rows (after run <repeats>), or with `final` the medians over runs and the ratios.
report() {  # <tmp> <repeats> [final]
  "$python" - "$@" <<'PY'
import json, re, statistics, sys
tmp, n, final = sys.argv[1], int(sys.argv[2]), len(sys.argv) > 3
TARGETS = (0.87, 0.88)

def ours_epochs(i):
    history, seconds = [], 0.0
    for line in open(f"{tmp}/o{i}.log"):
        m = re.search(r"epoch (\d+)/\d+: .*test accuracy ([\d.]+)%.* steps in ([\d.]+) s", line)
        if m:
            seconds += float(m[3])
            history.append({"testAccuracy": float(m[2]) / 100, "trainSeconds": seconds})
    return history

def time_to(history, target):
    return next((e["trainSeconds"] for e in history if e["testAccuracy"] >= target), None)

runs = []
for i in range(1, n + 1):
    try:
        o, t = json.load(open(f"{tmp}/o{i}.json")), json.load(open(f"{tmp}/t{i}.json"))
    except FileNotFoundError:
        continue
    runs.append((i, o, ours_epochs(i), t, t.get("epochs", [])))
fmt = lambda s: "-" if s is None else f"{s:.2f} s"
if not final:
    i, o, oh, t, th = runs[-1]
    for who, s, h in ((f"ringmaster ({o['backend']})", o, oh), ("pytorch ddp (gloo)", t, th)):
        print(f"{i:<6} {who:<22} {s['samplesPerSecond']:>10.0f} {s['testAccuracy']:>9.4f} "
              + " ".join(f"{fmt(time_to(h, x)):>9}" for x in TARGETS))
    sys.exit()
med = lambda xs: statistics.median(xs) if xs else None
o_sps = med([o["samplesPerSecond"] for _, o, _, _, _ in runs])
t_sps = med([t["samplesPerSecond"] for _, _, _, t, _ in runs])
o_acc = med([o["testAccuracy"] for _, o, _, _, _ in runs])
t_acc = med([t["testAccuracy"] for _, _, _, t, _ in runs])
print(f"median  ringmaster {o_sps:.0f} samples/s, accuracy {o_acc:.4f}")
print(f"median  pytorch    {t_sps:.0f} samples/s, accuracy {t_acc:.4f}")
print(f"ratio samples/s ringmaster/pytorch-ddp: {o_sps / t_sps:.2f}")
print(f"ratio accuracy  ringmaster/pytorch-ddp: {o_acc / t_acc:.4f}")
for x in TARGETS:
    ot = [s for s in (time_to(oh, x) for _, _, oh, _, _ in runs) if s is not None]
    tt = [s for s in (time_to(th, x) for _, _, _, _, th in runs) if s is not None]
    line = (f"time to {x:.0%}: ringmaster {fmt(med(ot))} (reached in {len(ot)}/{len(runs)}), "
            f"pytorch {fmt(med(tt))} (reached in {len(tt)}/{len(runs)})")
    if ot and tt:
        line += f"; ratio pytorch/ringmaster {med(tt) / med(ot):.2f}"
    print(line)
PY
}

printf '%-6s %-22s %10s %9s %9s %9s\n' run who samples/s accuracy "to 87%" "to 88%"
for i in $(seq 1 "$repeats"); do
  run_ours "$i" "$tmp/o$i.log" > "$tmp/o$i.json"
  run_torch "$i" > "$tmp/t$i.json"
  report "$tmp" "$i"
done
report "$tmp" "$repeats" final
