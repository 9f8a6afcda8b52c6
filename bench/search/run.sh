#!/usr/bin/env bash
# bench/search: how the operator keeps a search's trials running. `ringmaster local up` in a
# temporary data dir (API server, kubelet running real trainer processes, operator), then one
# random-search Experiment of N small trials (Fashion-MNIST MLP 784-16-10, a few steps each), P
# at a time, run to its end. Reported, from the operator's log (millisecond timestamps) and
# /proc:
#   - the search's wall time and each trial's life (created -> its TrainingJob Succeeded);
#   - occupancy: the time-weighted mean of trials running / P from the first creation to the last
#     (1.0: P trials ran at every moment a trial was left to create);
#   - idle gaps: each time a trial ended while more were left to create, how long its slot stayed
#     empty (that trial's end -> the next creation): count, median, p95, max;
#   - the operator's CPU seconds (utime+stime) and RSS over the search, per trial.
#   bench/search/run.sh [--trials N] [--parallelism P] [--steps S] [--keep-log FILE]
# (--keep-log: a copy of the operator's log, to read the timeline behind the figures)
# Needs build/bin/{ringmaster,ringmaster-operator,ringmaster-launcher,ringmaster-trainer}
# (scripts/build-main build) and dataset-fashion-mnist.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
trials=100 parallelism=4 steps=20 keep_log=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --parallelism) parallelism=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --keep-log) keep_log=$2; shift 2 ;;
    *) echo "usage: $0 [--trials N] [--parallelism P] [--steps S] [--keep-log FILE]" >&2; exit 2 ;;
  esac
done
source "$root/bench/lib/local_cluster.sh"
local_cluster_up bench/search
operator_pid=$(cat "$data/operator.pid")
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
ticks=$(getconf CLK_TCK)
# The operator settles after start-up before the search begins.
sleep 3
cpu0=$(cpu "$operator_pid") rss0=$(rss "$operator_pid")
cat <<YAML | "$kubectl" apply -f - >/dev/null
apiVersion: ringmaster.dev/v1alpha1
kind: Experiment
metadata: {name: bench-search}
spec:
  algorithm: random
  seed: 1
  parameters:
  - {path: optimizer.learningRate, min: 0.01, max: 0.2, scale: log}
  maxTrials: $trials
  parallelism: $parallelism
  maxFailedTrials: $trials
  trialTemplate:
    spec:
      replicas: 1
      image: ringmaster/trainer:0.1.0
      trainer:
        model: {type: mlp, hidden: [16]}
        dataset: {name: fashion-mnist, path: /usr/share/datasets/fashion-mnist}
        epochs: 1
        maxSteps: $steps
        batchSize: 64
        optimizer: {type: sgd, learningRate: 0.05}
YAML
start=$SECONDS
while true; do
  phase=$("$kubectl" get exp bench-search -o jsonpath='{.status.phase}' 2>/dev/null || true)
  [[ $phase == Succeeded || $phase == Failed ]] && break
  (( SECONDS - start > 3600 )) && { echo "bench/search: the search did not end within an hour" >&2; exit 1; }
  sleep 2
done
cpu1=$(cpu "$operator_pid") rss1=$(rss "$operator_pid")
"$kubectl" get exp bench-search
[[ -n $keep_log ]] && cp "$data/operator.log" "$keep_log"
python3 - "$data/operator.log" "$trials" "$parallelism" "$phase" \
  "$(( cpu1 - cpu0 ))" "$ticks" "$rss0" "$rss1" <<'PY'
import datetime, re, statistics, sys
log, n, p, phase, cpu_ticks, hz, rss0, rss1 = sys.argv[1:]
n, p, hz = int(n), int(p), int(hz)
def t(line):
    return datetime.datetime.strptime(line[:23], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
created, ended = {}, {}
for line in open(log, encoding="utf-8", errors="replace"):
    m = re.search(r"experiment default/bench-search: created trial (bench-search-trial-\d+)", line)
    if m:
        created.setdefault(m.group(1), t(line))
    m = re.search(r"job default/(bench-search-trial-\d+): \w+: (Succeeded|Failed) True", line)
    if m:
        ended.setdefault(m.group(1), t(line))
if len(created) != n:
    print(f"bench/search: the log shows {len(created)} trials created, want {n}", file=sys.stderr)
events = sorted([(v, +1) for v in created.values()] + [(v, -1) for v in ended.values()])
first, last_create = min(created.values()), max(created.values())
busy, active, prev = 0.0, 0, first
for when, delta in events:
    if when > last_create:
        break
    busy += min(active, p) * (when - prev)
    active, prev = active + delta, when
occupancy = busy / (p * (last_create - first)) if last_create > first else 1.0
# The i-th trial after the first P fills the slot the i-th ended trial freed; its gap is the
# time between. The TrainingJob controller logs a trial's end after writing it, so the search
# controller may create the replacement a few ms before that line: such a gap counts as 0.
ends = sorted(ended.values())
gaps = [max(0.0, c - e) for c, e in zip(sorted(created.values())[p:], ends)]
lives = [ended[k] - created[k] for k in ended if k in created]
gaps.sort()
def q(xs, f):
    return xs[min(len(xs) - 1, int(f * len(xs)))] if xs else float("nan")
cpu = int(cpu_ticks) / hz
print(f"search: {n} trials, parallelism {p}, {phase}, "
      f"{max(ended.values()) - first:.1f} s from the first creation to the last trial's end")
print(f"trial life (created -> Succeeded): median {statistics.median(lives):.2f} s, "
      f"max {max(lives):.2f} s")
print(f"occupancy until the last creation: {occupancy:.3f} of {p} slots")
print(f"idle gaps ({len(gaps)}): median {q(gaps, 0.5) * 1000:.0f} ms, p95 {q(gaps, 0.95) * 1000:.0f} ms, "
      f"max {max(gaps) * 1000 if gaps else float('nan'):.0f} ms")
print(f"operator: {cpu:.2f} CPU s over the search ({cpu / n * 1000:.1f} ms per trial), "
      f"RSS {int(rss0) / 1024:.1f} -> {int(rss1) / 1024:.1f} MiB "
      f"({(int(rss1) - int(rss0)) / n:.0f} KiB per trial)")
PY
