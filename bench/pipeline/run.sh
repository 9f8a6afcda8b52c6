#!/usr/bin/env bash
# bench/pipeline: our pipeline schedules vs a PyTorch pipeline of the same model on the same
# ranks, side by side in one run. A deep MLP (784 -> 2048 x 8 -> 10 by default) cut into S stages
# where the parameters balance, one process per stage with one BLAS thread, batch 128 in M
# micro-batches, gpipe, 1f1b and pipedream; PyTorch (Debian's python3-torch) runs the same cut,
# micro-batches and schedule with torch.distributed send/recv over gloo (gpipe and 1f1b: PyTorch
# has no PipeDream, so its columns say "-" there). Per row: samples/s of both and their
# ratio, and the measured bubble (mean over stages of the share of the schedule's time a stage
# did not work: passes, PipeDream's updates, and zeroing the gradients, which a stage does while
# its first receive waits; `clear` is that zeroing's share, so ours_bub + clear is the time
# outside passes) beside the ideal (S - 1) / (M + S - 1) of equal
# stages and the ideal for the cut (the schedule simulated with our stages' measured pass times:
# a cut of unequal layers is never quite balanced, and no schedule's passes beat their own
# simulation, which holds passes only: hold ours_bub + clear against it).
#   bench/pipeline/run.sh [--stages "2 4"] [--micro "1 2 4 8 16"] [--input I] [--width W]
#                         [--depth D] [--batch B] [--steps N] [--backend auto|shm|tcp|gloo]
# The ideal (S - 1) / (M + S - 1) assumes equal stages: equal forwards and equal backwards. Equal
# layers do not give them, because the first stage computes no input gradient for its first
# layer (and the last adds the loss). A tiny first layer does: --input 16 --width 1024
# --depth 33 cuts into two stages of 16 layers of 1024 x 1024 (the first with the 16-wide input
# layer, the last with the 10-wide output), the same passes within a percent. --batch 512 keeps
# micro-batches at 32 rows at M = 16 (at the default 128 they have 8, and such passes are bound
# by the memory bandwidth the two stages share).
# Our stages talk over --backend (auto: what the trainer picks, shm on one host); the peer
# always over gloo, the only CPU transport torch.distributed has here.
# Stages beyond the machine's cores share them, which inflates every bubble: read S=4 on a
# 2-core machine as oversubscribed (scripts/gpu-check --pipeline-only runs it on the GPU
# machine's cores). Needs build/bench/pipeline/bench_pipeline (scripts/run-main builds it), or
# BENCH_BIN.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
stages_list="2" micro_list="1 2 4 8 16" input=784 width=2048 depth=8 batch=128 steps=8
backend=auto
while [[ $# -gt 0 ]]; do
  case $1 in
    --stages) stages_list=$2; shift 2 ;;
    --micro) micro_list=$2; shift 2 ;;
    --input) input=$2; shift 2 ;;
    --width) width=$2; shift 2 ;;
    --depth) depth=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --backend) backend=$2; shift 2 ;;
    *) echo "usage: $0 [--stages LIST] [--micro LIST] [--input I] [--width W] [--depth D]" \
         "[--batch B] [--steps N] [--backend B]" >&2
       exit 2 ;;
  esac
done
bench=${BENCH_BIN:-$root/build/bench/pipeline/bench_pipeline}
[[ -x $bench ]] || { echo "bench/pipeline: $bench not built (run scripts/run-main first)" >&2; exit 1; }
python=${RM_PYTHON:-/usr/bin/python3}  # Debian's torch imports only there; elsewhere set RM_PYTHON
"$python" -c 'import torch' 2>/dev/null || { echo "bench/pipeline: python3-torch missing (scripts/setup)" >&2; exit 1; }
# shellcheck source=../lib/blas.sh
source "$root/bench/lib/blas.sh"
# shellcheck source=../lib/port.sh
source "$root/bench/lib/port.sh"
same_blas_kernels "$bench" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Runs `stages` ranks of a command line (ours or the peer); prints rank 0's JSON line.
ranks() {
  local stages=$1; shift
  local port pids=()
  port=$(free_port "$python")
  for ((rank = stages - 1; rank >= 0; rank--)); do
    RANK=$rank WORLD_SIZE=$stages MASTER_ADDR=127.0.0.1 MASTER_PORT=$port OMP_NUM_THREADS=1 \
      RINGMASTER_LOG_LEVEL=warn "$@" > "$tmp/out$rank" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$tmp/out0"
}
field() { "$python" -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

printf '%-3s %-3s %-9s %10s %10s %6s %9s %6s %9s %7s %9s\n' S M sched ours/s torch/s ratio \
  ours_bub clear torch_bub ideal cut_ideal
backend_seen=""
for stages in $stages_list; do
  shape=(--stages "$stages" --input "$input" --width "$width" --depth "$depth" --batch "$batch"
    --steps "$steps")
  partition=$("$bench" "${shape[@]}" --print-partition)
  for micro in $micro_list; do
    for schedule in gpipe 1f1b pipedream; do
      args=("${shape[@]}" --micro-batches "$micro" --schedule "$schedule")
      ours=$(ranks "$stages" "$bench" "${args[@]}" --backend "$backend")
      o=$(field "$ours" samples_per_second)
      backend_seen=$(field "$ours" backend)
      if [[ $schedule == pipedream ]]; then
        printf '%-3s %-3s %-9s %10.1f %10s %6s %9.3f %6.3f %9s %7s %9.3f\n' "$stages" "$micro" \
          "$schedule" "$o" - - "$(field "$ours" bubble)" "$(field "$ours" clear_share)" - - \
          "$(field "$ours" ideal_bubble_for_cut)"
        continue
      fi
      theirs=$(ranks "$stages" "$python" "$root/bench/pipeline/torch_pipeline.py" "${args[@]}" \
        --partition "$partition")
      t=$(field "$theirs" samples_per_second)
      printf '%-3s %-3s %-9s %10.1f %10.1f %6.2f %9.3f %6.3f %9.3f %7.3f %9.3f\n' "$stages" \
        "$micro" "$schedule" "$o" "$t" "$(awk "BEGIN{print $o / $t}")" "$(field "$ours" bubble)" \
        "$(field "$ours" clear_share)" "$(field "$theirs" bubble)" "$(field "$ours" ideal_bubble)" \
        "$(field "$ours" ideal_bubble_for_cut)"
    done
  done
done
echo "ours over $backend_seen, PyTorch over gloo"
