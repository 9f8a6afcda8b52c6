#!/usr/bin/env bash
# bench/operator: how the operator holds many jobs. Starts the API server, a kubelet in
# --simulate mode (bound pods are Running/Ready at once, no processes) and the operator, applies
# N TrainingJobs x R workers (spec.command trivial) and reports:
#   - seconds until every pod exists and until every job is Running,
#   - CPU seconds (utime+stime from /proc/<pid>/stat) of the operator, the API server and the
#     simulating kubelet, each on its own line (they share this machine's cores: who is slow),
#   - the CPU the operator and the API server spend idle once every job runs (over
#     --idle-seconds, default 120), and the operator's as a share of a core per 1000 Running jobs,
#   - the operator's peak RSS (VmHWM) and its RSS once every job runs (VmRSS),
#   - API requests per job (the operator's ringmaster_operator_api_requests_total, all verbs).
#   bench/operator/run.sh [--jobs N] [--replicas R] [--workers W] [--qps Q] [--pod-batch S]
#                         [--idle-seconds S]
# The operator's client is rate limited (--qps, default 50): at ~11 requests per job that bound,
# not CPU, sets the time to Running; --qps 0 lifts it.
# Needs build/bin/ringmaster and build/bin/ringmaster-operator built optimized:
#   RM_BUILD_TYPE=Release RM_BUILD_TARGETS="ringmaster ringmaster-operator" scripts/build build
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=1000 replicas=4 workers="" qps="" batch="" idle_seconds=120
while [[ $# -gt 0 ]]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --qps) qps=$2; shift 2 ;;
    --pod-batch) batch=$2; shift 2 ;;
    --idle-seconds) idle_seconds=$2; shift 2 ;;
    *) echo "usage: $0 [--jobs N] [--replicas R] [--workers W] [--qps Q] [--pod-batch S] [--idle-seconds S]" >&2; exit 2 ;;
  esac
done
bin=${RM_BIN_DIR:-$root/build/bin}
for b in ringmaster ringmaster-operator; do
  [[ -x $bin/$b ]] || { echo "bench/operator: $bin/$b not built" >&2; exit 1; }
done
kubectl=$(command -v kubectl.1.32 || ls /usr/lib/google-cloud-sdk/bin/kubectl.1.32 2>/dev/null || command -v kubectl)
tmp=$(mktemp -d)
cleanup() {
  kill "${operator_pid:-}" "${kubelet_pid:-}" "${server_pid:-}" 2>/dev/null || true
  pkill -P $$ curl 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { awk "BEGIN{printf \"%.1f\", $(now) - $1}"; }

"$bin/ringmaster" local serve --data-dir "$tmp" >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do [[ -s $tmp/kubeconfig ]] && break; sleep 0.1; done
export KUBECONFIG=$tmp/kubeconfig
"$kubectl" apply -f "$root/crds/trainingjob.yaml" >/dev/null
for _ in $(seq 100); do "$kubectl" get tj >/dev/null 2>&1 && break; sleep 0.1; done
"$bin/ringmaster" local kubelet --kubeconfig "$KUBECONFIG" --root-dir "$tmp/kubelet" \
  --node-name local --simulate --cpu 1000000 --memory 100000Gi >"$tmp/kubelet.log" 2>&1 &
kubelet_pid=$!
"$bin/ringmaster-operator" --kubeconfig "$KUBECONFIG" --bind-address 127.0.0.1 \
  --metrics-port 0 --health-port 0 ${workers:+--workers "$workers"} ${qps:+--qps "$qps"} \
  ${batch:+--pod-batch-seconds "$batch"} >"$tmp/operator.log" 2>&1 &
operator_pid=$!
port=""
for _ in $(seq 200); do
  port=$(sed -n 's/.*metrics port \([0-9]*\).*/\1/p' "$tmp/operator.log" | head -1)
  [[ -n $port && $port != -1 ]] && break
  sleep 0.1
done
[[ -n $port ]] || { echo "bench/operator: no metrics port in the operator log" >&2; cat "$tmp/operator.log" >&2; exit 1; }
requests() {
  curl -s "http://127.0.0.1:$port/metrics" |
    awk '/^ringmaster_operator_api_requests_total/ {s += $NF} END {printf "%d", s}'
}
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / t}' "/proc/${1:-$operator_pid}/stat"; }
hwm() { awk '/VmHWM/ {print $2 / 1024 " MiB"}' "/proc/$operator_pid/status"; }
rss() { awk '/VmRSS/ {print $2 / 1024 " MiB"}' "/proc/$operator_pid/status"; }
sleep 1  # the operator's first list/watch
requests_before=$(requests)
cpu_before=$(cpu) server_cpu_before=$(cpu "$server_pid") kubelet_cpu_before=$(cpu "$kubelet_pid")

python3 - "$jobs" "$replicas" >"$tmp/jobs.json" <<'PY'
import json, sys
n, r = int(sys.argv[1]), int(sys.argv[2])
items = [{"apiVersion": "ringmaster.dev/v1alpha1", "kind": "TrainingJob",
          "metadata": {"name": f"bench-{i:05d}"},
          "spec": {"replicas": r, "image": "ringmaster/trainer:0.1.0",
                   "command": ["true"]}} for i in range(n)]
json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)
PY
# The observers are two plain watches read by curl and counted by a few lines of Python (which,
# unlike mawk, hands on each line as it arrives): listing 4,000 pods every half second with
# kubectl, or decoding every event with it, cost this 2-core machine as much CPU as the operator
# spends, slowing what it measures. Each prints a running count, one line per change: pods added
# so far, and jobs whose phase is Running now.
server=$("$kubectl" config view --raw -o jsonpath='{.clusters[0].cluster.server}')
"$kubectl" config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
  base64 -d >"$tmp/ca.crt"
token=$("$kubectl" config view --raw -o jsonpath='{.users[0].user.token}')
watch_api() {
  curl -sN --cacert "$tmp/ca.crt" -H "Authorization: Bearer $token" "$server$1"
}
count_events() {
  python3 -c '
import re, sys
mode, n, running = sys.argv[1], 0, {}
for line in sys.stdin:
    if mode == "pods":
        if not line.startswith("{\"type\":\"ADDED\""):
            continue
        n += 1
    else:
        name = re.search(r"\"name\":\"(bench-[0-9]+)\"", line)
        on = "\"phase\":\"Running\"" in line
        if name is None or running.get(name[1], False) == on:
            continue
        running[name[1]] = on
        n += 1 if on else -1
    print(n, flush=True)
' "$1"
}
watch_api "/api/v1/pods?labelSelector=ringmaster.dev%2Fjob-name&watch=1" |
  count_events pods >"$tmp/pods.count" &
watch_api "/apis/ringmaster.dev/v1alpha1/trainingjobs?watch=1" | count_events jobs >"$tmp/jobs.count" &
observed() { tail -n 1 "$1" 2>/dev/null || true; }
start=$(now)
"$kubectl" create --validate=false -f "$tmp/jobs.json" >/dev/null
echo "created $jobs TrainingJobs x $replicas workers in $(since "$start") s"
want=$((jobs * replicas)) pods_at="" running_at="" running=0
for _ in $(seq 9000); do
  if [[ -z $pods_at ]]; then
    pods=$(observed "$tmp/pods.count")
    [[ ${pods:-0} -ge $want ]] && pods_at=$(since "$start")
  fi
  running=$(observed "$tmp/jobs.count")
  if [[ ${running:-0} -ge $jobs ]]; then
    [[ -n $pods_at ]] || pods_at=$(since "$start")
    running_at=$(since "$start")
    break
  fi
  sleep 0.2
done
requests_after=$(requests)
cpu_after=$(cpu) server_cpu_after=$(cpu "$server_pid") kubelet_cpu_after=$(cpu "$kubelet_pid")
echo "every pod exists ($want):       ${pods_at:-never} s"
echo "every job Running ($jobs):      ${running_at:-never (last: $running)} s"
delta() { awk "BEGIN{printf \"%.2f\", $2 - $1}"; }
echo "operator CPU:                   $(delta "$cpu_before" "$cpu_after") s (total $cpu_after s)"
echo "API server CPU:                 $(delta "$server_cpu_before" "$server_cpu_after") s"
echo "kubelet (simulating) CPU:       $(delta "$kubelet_cpu_before" "$kubelet_cpu_after") s"
# Nothing changes any more: what each process spends idle with these objects (the API server's
# housekeeping, the operator's resyncs and progress polls), over --idle-seconds (default 120: at
# least one progress interval, which grows with the number of Running jobs), after 10 s for the
# first round of progress reads to settle.
sleep 10
idle_before=$(cpu) idle_server_before=$(cpu "$server_pid")
sleep "$idle_seconds"
idle_operator=$(delta "$idle_before" "$(cpu)")
echo "idle $idle_seconds s, CPU:                 operator $idle_operator s, API server $(delta "$idle_server_before" "$(cpu "$server_pid")") s"
echo "idle operator per 1000 Running jobs: $(awk "BEGIN{printf \"%.2f\", 100 * $idle_operator / $idle_seconds * 1000 / $jobs}")% of a core"
echo "operator peak RSS (VmHWM):      $(hwm)"
echo "operator RSS now (VmRSS):       $(rss)  (every job Running: what the caches hold)"
echo "operator API requests:          $((requests_after - requests_before)) ($(awk "BEGIN{printf \"%.1f\", ($requests_after - $requests_before) / $jobs}") per job)"
curl -s "http://127.0.0.1:$port/metrics" | grep '^ringmaster_operator_api_requests_total' | sed 's/^/  /'
