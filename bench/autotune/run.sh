#!/usr/bin/env bash
# bench/autotune: autotune against a hand grid, side by side. For each case, the hand grid runs
# ringmaster-trainer once per (bucketCapMB, firstBucketCapMB) of autotune's default space for
# --steps steps; then autotune runs once over the same case and space. Printed per case: the grid (configured caps marked `default`, its
# best `best`, autotune's choice `tuned`), the samples autotune spent, its choice's grid step
# time against the grid's best and the defaults, and its tuning cost: the time its samples took
# beyond what the same steps take under its choice, as a share of a 5-epoch run under it.
#   bench/autotune/run.sh [--cases mlp-shm,mlp-10gbit,cnn-shm] [--steps N] [--repeats N]
#                         [--samples N]
# Each grid cell runs --repeats times (interleaved, so that a slow minute of the machine falls on
# every cell alike) and takes the median.
# Cases: mlp-shm (the README's MLP, 2 ranks over shared memory), mlp-10gbit (the same with each
# rank in its own network namespace behind a 10 Gbit/s link, tcp; needs root, bench/lib/netns.sh),
# cnn-shm (the CNN, 2 ranks over shared memory), mlp-wide-shm (an MLP of 2x2048 hidden, 31 MB of
# gradients, where the caps reach past 25 MB). Needs an optimized build in build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cases=mlp-shm,mlp-10gbit,cnn-shm steps=200 repeats=3 samples=30
while [[ $# -gt 0 ]]; do
  case $1 in
    --cases) cases=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    *) echo "usage: $0 [--cases LIST] [--steps N] [--repeats N] [--samples N]" >&2; exit 2 ;;
  esac
done
trainer=${RM_TRAINER:-$root/build/bin/ringmaster-trainer}
[[ -x $trainer ]] || { echo "bench/autotune: $trainer not built (run scripts/run-main first)" >&2; exit 1; }
python=/usr/bin/python3
# shellcheck source=../lib/port.sh
source "$root/bench/lib/port.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
netns_up=""
on_rank() { local rank=$1; shift; POD_IP=127.0.0.1 "$@"; }
master=127.0.0.1

# run_case <case> <name> <extra trainer flags...>: 2 ranks; rank 0's log in $tmp/<name>.log.
run_pair() {
  local name=$1 backend=$2; shift 2
  local port pids=()
  port=$(free_port "$python")
  for rank in 1 0; do
    on_rank "$rank" env RANK=$rank WORLD_SIZE=2 MASTER_ADDR="$master" MASTER_PORT=$port \
      OMP_NUM_THREADS=1 RINGMASTER_LOG_LEVEL="$([[ $rank == 0 ]] && echo info || echo warn)" \
      "$trainer" --backend "$backend" --batch-size 128 --lr 0.05 --momentum 0.9 \
      --summary-json "$tmp/$name.$rank.json" "$@" \
      >"$tmp/$name.$rank.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
}

for case_name in ${cases//,/ }; do
  backend=auto
  case $case_name in
    mlp-shm) model=(--model mlp --hidden 512,512) ;;
    mlp-wide-shm) model=(--model mlp --hidden 2048,2048) ;;
    cnn-shm) model=(--model cnn) ;;
    mlp-10gbit)
      model=(--model mlp --hidden 512,512) backend=tcp
      if [[ -z $netns_up ]]; then
        # shellcheck source=../lib/netns.sh
        source "$root/bench/lib/netns.sh"
        netns_check || { echo "bench/autotune: $case_name needs root and netns; skipped" >&2; continue; }
        trap 'netns_destroy; rm -rf "$tmp"' EXIT
        netns_create 2
        netns_shape 10gbit
        netns_up=1
      fi
      master=$(netns_addr 0)
      on_rank() {
        local rank=$1; shift
        netns_exec "$rank" env POD_IP="$(netns_addr "$rank")" "$@"
      } ;;
    *) echo "bench/autotune: unknown case $case_name" >&2; exit 2 ;;
  esac
  echo "== $case_name: the hand grid (${steps} steps each) and autotune (up to $samples samples)" >&2
  # The space: what autotune's default grid is for this model (its first log line says).
  run_pair "$case_name-space" "$backend" "${model[@]}" --max-steps 1 --autotune \
    --autotune-samples 1
  space=$(grep -o 'over bucketCapMB in .*' "$tmp/$case_name-space.0.log" | head -1)
  read -r -a caps <<<"$(sed -E 's/.*bucketCapMB in \{([^}]*)\}.*/\1/; s/,//g' <<<"$space")"
  read -r -a firsts <<<"$(sed -E 's/.*firstBucketCapMB in \{([^}]*)\}.*/\1/; s/,//g' <<<"$space")"
  for repeat in $(seq "$repeats"); do
    for cap in "${caps[@]}"; do
      for first in "${firsts[@]}"; do
        run_pair "$case_name-grid-$cap-$first-$repeat" "$backend" "${model[@]}" \
          --max-steps "$steps" --bucket-cap-mb "$cap" --first-bucket-cap-mb "$first"
      done
    done
  done
  run_pair "$case_name-tuned" "$backend" "${model[@]}" --max-steps $((samples * 13 + 20)) \
    --autotune --autotune-samples "$samples" --autotune-log "$tmp/$case_name-tuned.csv"
  "$python" - "$tmp" "$case_name" "${caps[*]}" "${firsts[*]}" "$repeats" <<'PY'
import csv, json, statistics, sys
tmp, case, caps, firsts = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
repeats = int(sys.argv[5])

grid, spreads = {}, []
for cap in caps:
    for first in firsts:
        times = []
        for r in range(1, repeats + 1):
            summary = json.load(open(f"{tmp}/{case}-grid-{cap}-{first}-{r}.0.json"))
            times.append(summary["trainSeconds"] / summary["steps"])
        grid[(cap, first)] = statistics.median(times)
        spreads.append((max(times) - min(times)) / grid[(cap, first)])
tuned = json.load(open(f"{tmp}/{case}-tuned.0.json")).get("autotune", {})
fmt = lambda v: f"{float(v):g}"
chosen = (fmt(tuned["bucketCapMB"]), fmt(tuned["firstBucketCapMB"]))
default = ("25", "1")
best = min(grid, key=grid.get)
print(f"\n{case}: step time (ms, median of {repeats} runs) by bucketCapMB (rows) and "
      "firstBucketCapMB (columns)")
print("bucketCapMB " + " ".join(f"{f:>14}" for f in firsts))
for cap in caps:
    cells = []
    for first in firsts:
        tags = [t for t, k in (("default", default), ("best", best), ("tuned", chosen))
                if k == (cap, first)]
        cells.append(f"{grid[(cap, first)] * 1e3:6.2f} {','.join(tags):>7}")
    print(f"{cap:>11} " + " ".join(f"{c:>14}" for c in cells))
print(f"{case}: the grid's run-to-run spread (max - min over the repeats, median over cells): "
      f"{100 * statistics.median(spreads):.1f}%; best against worst cell "
      f"{100 * (max(grid.values()) / min(grid.values()) - 1):.1f}%")
rows = list(csv.DictReader(open(f"{tmp}/{case}-tuned.csv")))
best_tuned = min(float(r["median_step_seconds"]) for r in rows)
spent = sum((float(r["median_step_seconds"]) - best_tuned) * 13 for r in rows)
steps_per_epoch = 60000 // (2 * 128) + 1
five_epochs = 5 * steps_per_epoch * best_tuned
g_chosen = grid.get(chosen)
print(f"{case}: autotune chose bucketCapMB={chosen[0]} firstBucketCapMB={chosen[1]} after "
      f"{tuned['samples']} samples")
if g_chosen is None:
    print(f"{case}: its choice is outside the grid")
else:
    print(f"{case}: ratio tuned/grid-best step time: {g_chosen / grid[best]:.3f} "
          f"(within 5%: {'yes' if g_chosen <= 1.05 * grid[best] else 'NO'})")
    print(f"{case}: ratio tuned/default step time:   {g_chosen / grid[default]:.3f}")
print(f"{case}: tuning cost {spent:.2f} s, {100 * spent / five_epochs:.1f}% of a 5-epoch run "
      f"({five_epochs:.0f} s at the chosen setting's step time)")
PY
done
