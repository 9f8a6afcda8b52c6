#!/usr/bin/env bash
# bench/search/hand_loop.sh: does an Experiment find what a user's own loop over TrainingJobs
# finds? `ringmaster local up` in a temporary data dir, then for --algorithm grid (default) or
# random: one Experiment of the Fashion-MNIST MLP (784-128-10, --epochs each, learning rate x
# momentum), run to its end; then the same values, read from each trial's
# ringmaster.dev/trial-parameters annotation, as plain TrainingJobs applied one at a time by
# this script, each waited for, as a user's shell loop would. Prints both tables side by side
# and whether both name the same best values with the same test accuracy (the trainer's default
# seed makes a run of the same values the same run).
#   bench/search/hand_loop.sh [--algorithm grid|random] [--epochs E]
# Needs build/bin/{ringmaster,ringmaster-operator,ringmaster-launcher,ringmaster-trainer}
# (scripts/build-main build) and dataset-fashion-mnist.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
algorithm=grid epochs=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --algorithm) algorithm=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    *) echo "usage: $0 [--algorithm grid|random] [--epochs E]" >&2; exit 2 ;;
  esac
done
source "$root/bench/lib/local_cluster.sh"
local_cluster_up bench/search/hand_loop

template="      replicas: 1
      image: ringmaster/trainer:0.1.0
      trainer:
        model: {type: mlp, hidden: [128]}
        dataset: {name: fashion-mnist, path: /usr/share/datasets/fashion-mnist}
        epochs: $epochs
        batchSize: 128
        optimizer: {type: sgd, learningRate: 0.05, momentum: 0.9}"
if [[ $algorithm == grid ]]; then
  space="  - {path: optimizer.learningRate, min: 0.005, max: 0.2, scale: log, gridPoints: 4}
  - {path: optimizer.momentum, choices: [0.5, 0.9]}"
  budget=""
else
  space="  - {path: optimizer.learningRate, min: 0.005, max: 0.2, scale: log}
  - {path: optimizer.momentum, choices: [0.0, 0.5, 0.9]}"
  budget="  maxTrials: 8"
fi
cat <<YAML | "$kubectl" apply -f - >/dev/null
apiVersion: ringmaster.dev/v1alpha1
kind: Experiment
metadata: {name: hand}
spec:
  algorithm: $algorithm
  seed: 3
  parameters:
$space
$budget
  parallelism: 2
  trialTemplate:
    spec:
$template
YAML
"$kubectl" wait --for=jsonpath='{.status.phase}'=Succeeded exp/hand --timeout=1800s >/dev/null
"$kubectl" get exp hand
"$kubectl" get tj -l ringmaster.dev/experiment=hand -o json > "$data/trials.json"

# The same values as TrainingJobs of the user's own, one at a time.
python3 - "$data/trials.json" > "$data/values.txt" <<'PY'
import json, sys
for t in sorted(json.load(open(sys.argv[1]))["items"],
                key=lambda t: int(t["metadata"]["labels"]["ringmaster.dev/trial-index"])):
    v = json.loads(t["metadata"]["annotations"]["ringmaster.dev/trial-parameters"])
    print(t["metadata"]["name"], repr(v["optimizer.learningRate"]), v["optimizer.momentum"])
PY
: > "$data/hand.txt"
while read -r trial lr momentum; do
  job="by-hand-${trial#hand-trial-}"
  cat <<YAML | "$kubectl" apply -f - >/dev/null
apiVersion: ringmaster.dev/v1alpha1
kind: TrainingJob
metadata: {name: $job}
spec:
$(printf '%s\n' "$template" | sed 's/^    //' | sed "s/learningRate: 0.05, momentum: 0.9/learningRate: $lr, momentum: $momentum/")
YAML
  "$kubectl" wait --for=jsonpath='{.status.phase}'=Succeeded "tj/$job" --timeout=900s >/dev/null
  acc=$("$kubectl" get tj "$job" -o jsonpath='{.status.progress.testAccuracy}')
  echo "$trial $lr $momentum $acc" >> "$data/hand.txt"
done < "$data/values.txt"

python3 - "$data/trials.json" "$data/hand.txt" <<'PY'
import json, sys
exp = {t["metadata"]["name"]: t["status"]["progress"]["testAccuracy"]
       for t in json.load(open(sys.argv[1]))["items"]}
hand = [l.split() for l in open(sys.argv[2])]
print(f"{'trial':14} {'learningRate':>22} {'momentum':>8} {'experiment':>10} {'by hand':>10}")
for trial, lr, m, acc in hand:
    print(f"{trial:14} {float(lr):22.6g} {float(m):8g} {exp[trial]:10.4f} {float(acc):10.4f}")
best_exp = max(exp, key=lambda k: (exp[k], k))
best_hand = max(hand, key=lambda r: (float(r[3]), r[0]))
same = best_exp == best_hand[0] and abs(exp[best_exp] - float(best_hand[3])) < 1e-9
print(f"best: experiment {best_exp} {exp[best_exp]:.4f}; by hand {best_hand[0]} "
      f"{float(best_hand[3]):.4f}: {'the same' if same else 'DIFFERENT'}")
sys.exit(0 if same else 1)
PY
