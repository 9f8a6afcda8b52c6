# Sourced by the benches that run jobs on `ringmaster local`. local_cluster_up NAME: checks that
# $bin (default build/bin) holds the four binaries a job needs, sets $kubectl, brings the cluster
# up in a temporary data dir ($data, removed with the cluster at exit) and exports KUBECONFIG.
local_cluster_up() {
  local name=$1 b
  bin=${RM_BIN_DIR:-$root/build/bin}
  for b in ringmaster ringmaster-operator ringmaster-launcher ringmaster-trainer; do
    [[ -x $bin/$b ]] || { echo "$name: $bin/$b not built (scripts/build-main build)" >&2; exit 1; }
  done
  kubectl=$(command -v kubectl.1.32 || ls /usr/lib/google-cloud-sdk/bin/kubectl.1.32 2>/dev/null ||
    command -v kubectl)
  export OMP_NUM_THREADS=1
  data=$(mktemp -d)
  trap '"$bin/ringmaster" local down --data-dir "$data" >/dev/null 2>&1 || true; rm -rf "$data"' EXIT
  "$bin/ringmaster" local up --data-dir "$data" >/dev/null
  export KUBECONFIG=$data/kubeconfig
}
