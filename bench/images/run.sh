#!/usr/bin/env bash
# bench/images: README command 1's job (examples/fashion-mnist-mlp.yaml) run by `ringmaster local
# run` twice on this machine, side by side in time: its containers as host processes (the
# kubelet's default) and in their image through podman (--container-runtime podman, the job's
# image the CPU worker that scripts/build-images makes from this tree's binaries). Reports each
# run's samples/s (the job's own figure at its end), the ratio, and each mode's pod start-up: from
# the kubelet taking the pod ("assigned to this node" in its log) to the container's first log
# line (the launcher's first words), averaged over the job's pods. Both runs use `backend: tcp`:
# with `auto`, host-process pods find shm across pods (they share the host's /dev/shm, which pods
# of a real node do not), while containers, each with its own /dev/shm as on a real node, use
# tcp; the comparison is of the container, not of the transport.
#   bench/images/run.sh [--repeats N]     (default 1; runs alternate host, podman, host, ...)
# Needs build/bin/ringmaster (scripts/run-main builds it), podman and debootstrap (scripts/setup).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
repeats=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    *) echo "usage: $0 [--repeats N]" >&2; exit 2 ;;
  esac
done
build=${RM_BUILD_DIR:-$root/build}
ringmaster=$build/bin/ringmaster
[[ -x $ringmaster ]] || { echo "bench/images: $ringmaster not built (scripts/run-main)" >&2; exit 1; }
export CONTAINERS_CONF=$root/scripts/containers.conf
"$root/scripts/build-images" --binaries "$build" worker-cpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's|backend: auto|backend: tcp|' "$root/examples/fashion-mnist-mlp.yaml" >"$tmp/job.yaml"
sed 's|image: ringmaster/trainer:0.1.0|image: ringmaster/trainer-cpu:0.1.0|' "$tmp/job.yaml" \
  >"$tmp/job-cpu.yaml"
grep -q 'backend: tcp' "$tmp/job.yaml" || { echo "bench/images: the job names no backend" >&2; exit 1; }

# One run: prints "<samples/s> <mean pod start-up seconds>".
run_once() {  # mode
  local mode=$1 data="$tmp/$1-$RANDOM" job=$tmp/job.yaml flags=""
  if [[ $mode == podman ]]; then job=$tmp/job-cpu.yaml flags="--container-runtime podman"; fi
  "$ringmaster" local run "$job" --data-dir "$data" --kubelet-flags "$flags" >"$data.out" 2>&1 ||
    { cat "$data.out" >&2; "$ringmaster" local down --data-dir "$data" >/dev/null; exit 1; }
  python3 - "$data" <<'PY'
import datetime, glob, os, re, sys
data = sys.argv[1]
out = open(data + ".out").read()
rate = re.findall(r"samples/s (\d+)", out)[-1]
def ts(line):
    return datetime.datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp()
assigned = {}
for line in open(os.path.join(data, "kubelet.log")):
    m = re.search(r"pod default/(\S+) \(uid .*\) assigned to this node", line)
    if m:
        assigned[m.group(1)] = ts(line)
startups = []
for log in glob.glob(os.path.join(data, "kubelet/pods/default/*/worker.log")):
    pod = os.path.basename(os.path.dirname(log)).rsplit("_", 1)[0]
    first = next((l for l in open(log) if re.match(r"\d{4}-\d\d-\d\dT", l)), None)
    if first and pod in assigned:
        startups.append(ts(first) - assigned[pod])
print(rate, "%.2f" % (sum(startups) / len(startups)) if startups else "n/a")
PY
  "$ringmaster" local down --data-dir "$data" >/dev/null
}

printf '%-8s %-7s %12s %16s\n' run mode samples/s "pod start-up s"
declare -A rates
for i in $(seq "$repeats"); do
  for mode in host podman; do
    read -r rate startup < <(run_once "$mode")
    printf '%-8s %-7s %12s %16s\n' "$i" "$mode" "$rate" "$startup"
    rates[$mode]="${rates[$mode]:-} $rate"
  done
done
python3 - "${rates[host]}" "${rates[podman]}" <<'PY'
import statistics, sys
host = [float(x) for x in sys.argv[1].split()]
podman = [float(x) for x in sys.argv[2].split()]
h, p = statistics.median(host), statistics.median(podman)
print(f"median samples/s: host {h:.0f}, podman {p:.0f}; podman/host = {p / h:.3f}")
PY
