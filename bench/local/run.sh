#!/usr/bin/env bash
# bench/local: how `ringmaster local` holds a large cluster. Starts the API server and a kubelet
# in simulated mode (pods marked Running without processes), creates N pods through the API,
# then times `kubectl get pods` (server-side Table of every pod) and reports the API server's
# resident memory (VmRSS now, VmHWM peak).
#   bench/local/run.sh [--pods N] [--repeats R]
# Needs build/bin/ringmaster (scripts/run-main, or scripts/build build -DCMAKE_BUILD_TYPE=Release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pods=10000 repeats=5
while [[ $# -gt 0 ]]; do
  case $1 in
    --pods) pods=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    *) echo "usage: $0 [--pods N] [--repeats R]" >&2; exit 2 ;;
  esac
done
ringmaster=${RM_RINGMASTER:-$root/build/bin/ringmaster}
[[ -x $ringmaster ]] || { echo "bench/local: $ringmaster not built" >&2; exit 1; }
kubectl=$(command -v kubectl.1.32 || ls /usr/lib/google-cloud-sdk/bin/kubectl.1.32 2>/dev/null || command -v kubectl)
tmp=$(mktemp -d)
cleanup() { kill "${kubelet_pid:-}" "${server_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

"$ringmaster" local serve --data-dir "$tmp" >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do [[ -s $tmp/kubeconfig ]] && break; sleep 0.1; done
export KUBECONFIG=$tmp/kubeconfig
"$ringmaster" local kubelet --kubeconfig "$KUBECONFIG" --root-dir "$tmp/kubelet" --simulate \
  --cpu 100000 --memory 100000Gi >"$tmp/kubelet.log" 2>&1 &
kubelet_pid=$!

# One List manifest with N pods; kubectl creates them one request each.
python3 - "$pods" >"$tmp/pods.json" <<'PY'
import json, sys
n = int(sys.argv[1])
items = [{"apiVersion": "v1", "kind": "Pod",
          "metadata": {"name": f"sim-{i:05d}", "labels": {"ringmaster.dev/job-name": f"job-{i // 4}"}},
          "spec": {"containers": [{"name": "worker", "image": "ringmaster/trainer:0.1.0",
                                   "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}
         for i in range(n)]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
PY
start=$(date +%s.%N)
"$kubectl" create --validate=false -f "$tmp/pods.json" >/dev/null
created=$(date +%s.%N)
echo "created $pods pods in $(printf '%.1f' "$(awk "BEGIN{print $created - $start}")") s"
# Wait until the kubelet has marked them all Running.
for _ in $(seq 600); do
  running=$("$kubectl" get pods --field-selector=status.phase=Running -o name | wc -l)
  [[ $running -ge $pods ]] && break
  sleep 1
done
echo "running: $running / $pods after $(printf '%.1f' "$(awk "BEGIN{print $(date +%s.%N) - $start}")") s"

times=()
for _ in $(seq "$repeats"); do
  t0=$(date +%s.%N)
  rows=$("$kubectl" get pods --no-headers | wc -l)
  t1=$(date +%s.%N)
  times+=("$(awk "BEGIN{print $t1 - $t0}")")
done
sorted=$(printf '%s\n' "${times[@]}" | sort -n)
median=$(echo "$sorted" | sed -n "$(( (repeats + 1) / 2 ))p")
echo "kubectl get pods: $rows rows, median $(printf '%.2f' "$median") s of $repeats (all: $(echo $sorted | tr '\n' ' '))"
t0=$(date +%s.%N)
"$kubectl" get --raw "/api/v1/namespaces/default/pods?limit=500" >/dev/null
echo "one page of 500 (raw JSON): $(printf '%.3f' "$(awk "BEGIN{print $(date +%s.%N) - $t0}")") s"
grep -E 'VmRSS|VmHWM' /proc/$server_pid/status | sed 's/^/api server /'
grep -E 'VmRSS|VmHWM' /proc/$kubelet_pid/status | sed 's/^/kubelet /'
