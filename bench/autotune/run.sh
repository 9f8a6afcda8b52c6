#!/usr/bin/env bash
# bench/autotune: autotune against a hand grid, side by side. For each case, the hand grid runs
# ringmaster-trainer once per setting of autotune's default space (every combination of its
# knobs' values: the bucket caps of a data-parallel case, the micro-batch count of a pipeline)
# for --steps steps; then autotune runs once over the same case and space. Printed per case: the
# grid (the configured setting marked `default`, its best `best`, autotune's choice `tuned`), the
# samples autotune spent, its choice's grid step time against the grid's best and the default,
# and its tuning cost: the time its samples took beyond what the same steps take under its
# choice, as a share of a 5-epoch run under it.
#   bench/autotune/run.sh [--cases mlp-shm,mlp-10gbit,tcp-10gbit,cnn-shm,pipeline-shm,mlp-1rank]
#                         [--steps N] [--repeats N] [--samples N] [--confirm N]
# Each grid cell runs --repeats times (interleaved, so that a slow minute of the machine falls on
# every cell alike) and takes the median. The grid's best cell is the least of many noisy medians,
# and so flatters itself (the winner's curse): where autotune chose another cell, the two then run
# head to head, --confirm times each, interleaved, and their medians are compared too.
# Cases: mlp-shm (the README's MLP, 2 ranks over shared memory), mlp-10gbit (the same with each
# rank in its own network namespace behind a 10 Gbit/s link, tcp; needs root, bench/lib/netns.sh),
# tcp-10gbit (the same link, buckets of 0.25 and 1 MiB: tcp's recursive-doubling threshold),
# cnn-shm (the CNN, 2 ranks over shared memory), mlp-wide-shm (an MLP of 2x2048 hidden, 31 MB of
# gradients, where the caps reach past 25 MB), pipeline-shm (an MLP of 4x1024 hidden cut into 2
# 1f1b stages over shared memory, one micro-batch per stage configured: its micro-batch count),
# mlp-1rank (the README's MLP on one rank, which has the machine's cores to itself: its BLAS
# threads). Every rank is told it shares the machine with the case's other ranks
# (LOCAL_WORLD_SIZE), which caps the BLAS threads autotune tries at its share of the cores.
# Needs an optimized build in build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cases=mlp-shm,mlp-10gbit,tcp-10gbit,cnn-shm,pipeline-shm,mlp-1rank steps=200 repeats=3 samples=30
confirm=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --cases) cases=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --confirm) confirm=$2; shift 2 ;;
    *) echo "usage: $0 [--cases LIST] [--steps N] [--repeats N] [--samples N] [--confirm N]" >&2
       exit 2 ;;
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

# run_pair <name> <backend> <trainer flags...>: $ranks ranks (2 unless the case says), all on
# this machine; rank 0's log in $tmp/<name>.0.log.
run_pair() {
  local name=$1 backend=$2; shift 2
  local port pids=()
  port=$(free_port "$python")
  for rank in $(seq $((ranks - 1)) -1 0); do
    on_rank "$rank" env RANK=$rank WORLD_SIZE=$ranks LOCAL_RANK=$rank LOCAL_WORLD_SIZE=$ranks \
      MASTER_ADDR="$master" MASTER_PORT=$port \
      OMP_NUM_THREADS=1 RINGMASTER_LOG_LEVEL="$([[ $rank == 0 ]] && echo info || echo warn)" \
      "$trainer" --backend "$backend" --batch-size 128 --lr 0.05 --momentum 0.9 \
      --metrics-port -1 --summary-json "$tmp/$name.$rank.json" "$@" \
      >"$tmp/$name.$rank.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
}

# The flags that set a knob: the bucket caps, tcp's doubling threshold and BLAS threads have
# flags of their own; a pipeline's micro-batch count is a field of the case's config, written per
# value.
knob_flags() {
  local name=$1 knob=$2 value=$3
  case $knob in
    bucketCapMB) echo "--bucket-cap-mb $value" ;;
    firstBucketCapMB) echo "--first-bucket-cap-mb $value" ;;
    blasThreads) echo "--blas-threads $value" ;;
    tcpDoublingMaxKB) echo "--tcp-doubling-max-kb $value" ;;
    microBatches)
      sed "s/microBatches: .*/microBatches: $value/" "$tmp/$case_name.yaml" >"$tmp/$name.yaml"
      echo "--config $tmp/$name.yaml" ;;
    *) echo "bench/autotune: no flag for knob $knob" >&2; exit 2 ;;
  esac
}

for case_name in ${cases//,/ }; do
  # case_yaml: the case's config (every run); tune_yaml: what autotune's runs add to it, to keep
  # knobs another case studies out of this one's space (a list of one value is not searched).
  backend=auto ranks=2 case_yaml="" tune_yaml=""
  case $case_name in
    mlp-shm) model=(--model mlp --hidden 512,512) ;;
    mlp-1rank) model=(--model mlp --hidden 512,512) ranks=1 ;;
    mlp-wide-shm) model=(--model mlp --hidden 2048,2048) ;;
    cnn-shm) model=(--model cnn) ;;
    pipeline-shm)
      model=(--model mlp --hidden 1024,1024,1024,1024)
      case_yaml=$'parallelism:\n  pipeline:\n    stages: 2\n    schedule: 1f1b\n    microBatches: 2\n' ;;
    mlp-10gbit | tcp-10gbit)
      model=(--model mlp --hidden 512,512) backend=tcp
      if [[ $case_name == mlp-10gbit ]]; then
        tune_yaml=$'autotune:\n  tcpDoublingMaxKB: [32]\n'
      else
        # Small buckets, so that the threshold decides how they are summed.
        case_yaml=$'firstBucketCapMB: 0.25\nbucketCapMB: 1\n'
        tune_yaml=$'autotune:\n  bucketCapMB: [1]\n  firstBucketCapMB: [0.25]\n'
      fi
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
  config=() tune_config=()
  if [[ -n $case_yaml ]]; then
    printf '%s' "$case_yaml" >"$tmp/$case_name.yaml"
    config=(--config "$tmp/$case_name.yaml")
  fi
  if [[ -n $case_yaml$tune_yaml ]]; then
    printf '%s%s' "$case_yaml" "$tune_yaml" >"$tmp/$case_name-tune.yaml"
    tune_config=(--config "$tmp/$case_name-tune.yaml")
  fi
  echo "== $case_name: the hand grid (${steps} steps each) and autotune (up to $samples samples)" >&2
  # The space: what autotune's default grid is for this case (its first log line says), as
  # "knob=v1,v2,...;knob=...".
  run_pair "$case_name-space" "$backend" "${model[@]}" "${tune_config[@]}" --max-steps 1 --autotune \
    --autotune-samples 1
  space=$(grep -o ' over [a-zA-Z]* in .*' "$tmp/$case_name-space.0.log" | head -1 |
    sed -E 's/^ over //; s/ in \{/=/g; s/\}//g; s/, /,/g; s/; /;/g')
  # Every combination of the knobs' values, one line each: "knob=v knob=v".
  mapfile -t cells < <("$python" - "$space" <<'PY'
import itertools, sys
knobs = [part.split("=") for part in sys.argv[1].split(";")]
for values in itertools.product(*[v.split(",") for _, v in knobs]):
    print(" ".join(f"{k}={v}" for (k, _), v in zip(knobs, values)))
PY
  )
  # run_cell <run name> <cell>: one run of the grid's setting "knob=v knob=v".
  run_cell() {
    local cell_name=$1 cell=$2 flags=() kv more
    for kv in $cell; do
      read -r -a more <<<"$(knob_flags "$cell_name" "${kv%%=*}" "${kv#*=}")"
      flags+=("${more[@]}")
    done
    # A knob written into a config of the cell's own replaces the case's config.
    [[ " ${flags[*]} " == *" --config "* ]] || flags+=("${config[@]}")
    run_pair "$cell_name" "$backend" "${model[@]}" "${flags[@]}" --max-steps "$steps"
  }
  for repeat in $(seq "$repeats"); do
    for cell in "${cells[@]}"; do run_cell "$case_name-grid-${cell// /-}-$repeat" "$cell"; done
  done
  run_pair "$case_name-tuned" "$backend" "${model[@]}" "${tune_config[@]}" \
    --max-steps $((samples * 13 + 20)) --autotune --autotune-samples "$samples" \
    --autotune-log "$tmp/$case_name-tuned.csv"
  # The grid's best cell and autotune's choice, as cells ("knob=v knob=v"), one line each.
  mapfile -t rivals < <("$python" - "$tmp" "$case_name" "$space" "$repeats" <<'PY'
import itertools, json, statistics, sys
tmp, case, space, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
knobs = [part.split("=")[0] for part in space.split(";")]
values = {part.split("=")[0]: part.split("=")[1].split(",") for part in space.split(";")}
def median(cell):
    name = "-".join(f"{k}={v}" for k, v in zip(knobs, cell))
    return statistics.median(
        s["trainSeconds"] / s["steps"]
        for s in (json.load(open(f"{tmp}/{case}-grid-{name}-{r}.0.json"))
                  for r in range(1, repeats + 1)))
best = min(itertools.product(*[values[k] for k in knobs]), key=median)
tuned = json.load(open(f"{tmp}/{case}-tuned.0.json")).get("autotune", {})
# The grid's spelling of the value autotune chose ("25" for 25.0).
chosen = [next((v for v in values[k] if float(v) == float(tuned[k])), str(tuned[k])) for k in knobs]
print(" ".join(f"{k}={v}" for k, v in zip(knobs, best)))
print(" ".join(f"{k}={v}" for k, v in zip(knobs, chosen)))
PY
  )
  if [[ ${#rivals[@]} == 2 && ${rivals[0]} != "${rivals[1]}" && $confirm -gt 0 ]]; then
    for repeat in $(seq "$confirm"); do
      run_cell "$case_name-confirm-best-$repeat" "${rivals[0]}"
      run_cell "$case_name-confirm-tuned-$repeat" "${rivals[1]}"
    done
  fi
  "$python" - "$tmp" "$case_name" "$space" "$repeats" "$ranks" "$confirm" <<'PY'
import csv, json, statistics, sys
tmp, case, space, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ranks, confirm = int(sys.argv[5]), int(sys.argv[6])
knobs = [part.split("=")[0] for part in space.split(";")]
values = {part.split("=")[0]: part.split("=")[1].split(",") for part in space.split(";")}
fmt = lambda v: f"{float(v):g}"

import itertools
grid, spreads = {}, []
for cell in itertools.product(*[values[k] for k in knobs]):
    times = []
    for r in range(1, repeats + 1):
        name = "-".join(f"{k}={v}" for k, v in zip(knobs, cell))
        summary = json.load(open(f"{tmp}/{case}-grid-{name}-{r}.0.json"))
        times.append(summary["trainSeconds"] / summary["steps"])
    key = tuple(fmt(v) for v in cell)
    grid[key] = statistics.median(times)
    spreads.append((max(times) - min(times)) / grid[key])
tuned = json.load(open(f"{tmp}/{case}-tuned.0.json")).get("autotune", {})
rows = list(csv.DictReader(open(f"{tmp}/{case}-tuned.csv")))
chosen = tuple(fmt(tuned[k]) for k in knobs)
default = tuple(fmt(rows[0][k]) for k in knobs)  # the first sample is the configured setting
best = min(grid, key=grid.get)
tags = lambda key: ",".join(t for t, k in (("default", default), ("best", best), ("tuned", chosen))
                            if k == key)
if len(knobs) == 2:
    print(f"\n{case}: step time (ms, median of {repeats} runs) by {knobs[0]} (rows) and "
          f"{knobs[1]} (columns)")
    print(f"{knobs[0]:>11} " + " ".join(f"{fmt(f):>14}" for f in values[knobs[1]]))
    for a in values[knobs[0]]:
        cells = [f"{grid[(fmt(a), fmt(b))] * 1e3:6.2f} {tags((fmt(a), fmt(b))):>7}"
                 for b in values[knobs[1]]]
        print(f"{fmt(a):>11} " + " ".join(f"{c:>14}" for c in cells))
else:
    print(f"\n{case}: step time (ms, median of {repeats} runs) by {', '.join(knobs)}")
    for key in sorted(grid, key=lambda k: [float(v) for v in k]):
        print(f"{' '.join(key):>11} {grid[key] * 1e3:8.2f} {tags(key)}")
print(f"{case}: the grid's run-to-run spread (max - min over the repeats, median over cells): "
      f"{100 * statistics.median(spreads):.1f}%; best against worst cell "
      f"{100 * (max(grid.values()) / min(grid.values()) - 1):.1f}%")
best_tuned = min(float(r["median_step_seconds"]) for r in rows)
spent = sum((float(r["median_step_seconds"]) - best_tuned) * 13 for r in rows)
replicas = 1 if case.startswith("pipeline") else ranks  # a pipeline's stages are one replica
steps_per_epoch = 60000 // (replicas * 128) + 1
five_epochs = 5 * steps_per_epoch * best_tuned
g_chosen = grid.get(chosen)
print(f"{case}: autotune chose {' '.join(f'{k}={v}' for k, v in zip(knobs, chosen))} after "
      f"{tuned['samples']} samples")
if g_chosen is None:
    print(f"{case}: its choice is outside the grid")
else:
    print(f"{case}: ratio tuned/grid-best step time: {g_chosen / grid[best]:.3f} "
          f"(within 5%: {'yes' if g_chosen <= 1.05 * grid[best] else 'NO'})")
    print(f"{case}: ratio tuned/default step time:   {g_chosen / grid[default]:.3f}")
import os
if chosen != best and confirm > 0 and os.path.exists(f"{tmp}/{case}-confirm-best-1.0.json"):
    def confirmed(who):
        return statistics.median(
            s["trainSeconds"] / s["steps"]
            for s in (json.load(open(f"{tmp}/{case}-confirm-{who}-{r}.0.json"))
                      for r in range(1, confirm + 1)))
    head = confirmed("tuned") / confirmed("best")
    print(f"{case}: head to head ({confirm} runs each, interleaved): tuned/grid-best step time "
          f"{head:.3f} (within 5%: {'yes' if head <= 1.05 else 'NO'})")
print(f"{case}: tuning cost {spent:.2f} s, {100 * spent / five_epochs:.1f}% of a 5-epoch run "
      f"({five_epochs:.0f} s at the chosen setting's step time)")
PY
done
