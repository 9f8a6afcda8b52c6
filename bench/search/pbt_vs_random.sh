#!/usr/bin/env bash
# bench/search/pbt_vs_random.sh: population-based training against random search, in training
# steps. On `ringmaster local`, for each seed: a random-search Experiment of --trials trials of
# the Fashion-MNIST MLP (784-128-10, --epochs each, learning rate log-uniform in [0.002, 0.5],
# momentum 0, 0.5 or 0.9), --parallelism at a time; then a pbt Experiment of a population of
# --parallelism over the same space for --pbt-epochs. Reported per seed, from the trials' own
# logs (every epoch's test accuracy):
#   - random: the best final test accuracy and the search's total training steps;
#   - pbt: the steps the whole population had trained when one member first reached random's
#     best (epochs x population x steps per epoch; "-" if none did), its best final accuracy;
#   - the ratio of the two step counts (the goal: at most 0.40), and the medians over seeds.
#   bench/search/pbt_vs_random.sh [--seeds "1 2 3"] [--trials N] [--parallelism P]
#                                 [--epochs E] [--pbt-epochs E]
# Needs build/bin/{ringmaster,ringmaster-operator,ringmaster-launcher,ringmaster-trainer}
# (scripts/build-main build) and dataset-fashion-mnist.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seeds="1 2 3" trials=16 parallelism=4 epochs=4 pbt_epochs=4
while [[ $# -gt 0 ]]; do
  case $1 in
    --seeds) seeds=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --parallelism) parallelism=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --pbt-epochs) pbt_epochs=$2; shift 2 ;;
    *) echo "usage: $0 [--seeds \"1 2 3\"] [--trials N] [--parallelism P] [--epochs E] [--pbt-epochs E]" >&2; exit 2 ;;
  esac
done
source "$root/bench/lib/local_cluster.sh"
local_cluster_up bench/search/pbt_vs_random

# experiment NAME ALGORITHM SEED EPOCHS EXTRA: applies one Experiment and waits for its end.
experiment() {
  local name=$1 algorithm=$2 seed=$3 e=$4 extra=$5
  cat <<YAML | "$kubectl" apply -f - >/dev/null
apiVersion: ringmaster.dev/v1alpha1
kind: Experiment
metadata: {name: $name}
spec:
  algorithm: $algorithm
  seed: $seed
  parameters:
  - {path: optimizer.learningRate, min: 0.002, max: 0.5, scale: log}
  - {path: optimizer.momentum, choices: [0.0, 0.5, 0.9]}
  parallelism: $parallelism
  maxFailedTrials: $trials
$extra
  trialTemplate:
    spec:
      replicas: 1
      image: ringmaster/trainer:0.1.0
      trainer:
        model: {type: mlp, hidden: [128]}
        dataset: {name: fashion-mnist, path: /usr/share/datasets/fashion-mnist}
        epochs: $e
        batchSize: 128
        optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9}
      volumes:
      - name: pbt
        persistentVolumeClaim: {claimName: bench-pbt}
      volumeMounts:
      - {name: pbt, mountPath: /pbt}
YAML
  "$kubectl" wait --for=jsonpath='{.status.phase}'=Succeeded "exp/$name" --timeout=3600s >/dev/null
}

# accuracies NAME: one line per trial of Experiment NAME: its name, then each epoch's accuracy.
accuracies() {
  local t
  for t in $("$kubectl" get tj -l "ringmaster.dev/experiment=$1" -o name); do
    t=${t#*/}
    echo "$t $("$kubectl" logs "$t-worker-0" | sed -n 's/.*epoch [0-9]*\/[0-9]*: .*test accuracy \([0-9.]*\)%.*/\1/p' | tr '\n' ' ')"
  done
}

results=$(mktemp)
for seed in $seeds; do
  experiment "random-$seed" random "$seed" "$epochs" "  maxTrials: $trials"
  accuracies "random-$seed" > "$data/random-$seed.txt"
  experiment "pbt-$seed" pbt "$seed" "$pbt_epochs" "  pbt: {directory: /pbt, waitSeconds: 300}"
  accuracies "pbt-$seed" > "$data/pbt-$seed.txt"
  python3 - "$data/random-$seed.txt" "$data/pbt-$seed.txt" "$seed" "$trials" "$parallelism" \
    "$epochs" >> "$results" <<'PY'
import sys
random_file, pbt_file, seed, trials, p, epochs = sys.argv[1:]
trials, p, epochs = int(trials), int(p), int(epochs)
steps_per_epoch = 469  # 60000 / 128, rounded up
def read(path):
    return {l.split()[0]: [float(a) / 100 for a in l.split()[1:]] for l in open(path) if l.split()}
random, pbt = read(random_file), read(pbt_file)
best_random = max(acc[-1] for acc in random.values())
random_steps = trials * epochs * steps_per_epoch
pbt_epochs = max(len(a) for a in pbt.values())
reached = next((e for e in range(pbt_epochs)
                if max(a[e] for a in pbt.values() if len(a) > e) >= best_random), None)
pbt_steps = (reached + 1) * p * steps_per_epoch if reached is not None else None
best_pbt = max(a[-1] for a in pbt.values())
print(seed, f"{best_random:.4f}", random_steps, f"{best_pbt:.4f}",
      pbt_steps if pbt_steps else "-",
      f"{pbt_steps / random_steps:.3f}" if pbt_steps else "-")
PY
  tail -1 "$results"
done
python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{'seed':>4} {'random best':>11} {'random steps':>12} {'pbt best':>8} "
      f"{'pbt steps to it':>15} {'ratio':>6}")
for r in rows:
    print(f"{r[0]:>4} {r[1]:>11} {r[2]:>12} {r[3]:>8} {r[4]:>15} {r[5]:>6}")
ratios = [float(r[5]) for r in rows if r[5] != "-"]
print(f"median: random best {statistics.median(float(r[1]) for r in rows):.4f}, "
      f"pbt best {statistics.median(float(r[3]) for r in rows):.4f}, ratio "
      + (f"{statistics.median(ratios):.3f} over {len(ratios)} of {len(rows)} seeds where pbt "
         "reached it" if ratios else "- (pbt reached random's best in no seed)"))
PY
