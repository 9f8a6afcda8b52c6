#!/usr/bin/env bash
# chart_helm_test: `helm lint --strict` and `helm template` on helm/ringmaster, and helm itself
# rejects a value that values.schema.json forbids and a Kubernetes older than kubeVersion.
# helm: $RM_HELM, else on PATH (scripts/install-helm installs the pinned one); its absence is a
# failure, not a skip.
# Usage: check_helm.sh REPO_ROOT
set -uo pipefail
chart="${1:?usage: check_helm.sh REPO_ROOT}/helm/ringmaster"
helm=${RM_HELM:-$(command -v helm || true)}
[[ -n $helm && -x $helm ]] ||
  { echo "FAIL: helm is not installed (scripts/install-helm installs the pinned one)"; exit 1; }
fail=0
run() {
  echo "+ $*"
  "$@" >/tmp/chart_helm_test.$$ 2>&1 || { cat /tmp/chart_helm_test.$$; echo "FAIL: $*"; fail=1; }
}
run "$helm" lint --strict "$chart"
run "$helm" lint --strict "$chart" --set watchNamespace=team-a --set podMonitor.enabled=true
run "$helm" template rm "$chart" -n ringmaster
run "$helm" template rm "$chart" -n ringmaster --set watchNamespace=team-a \
  --set gangScheduling.volcano=true --set serviceMonitor.enabled=true
echo "+ helm template --set replicaCount=-1 (must fail)"
if "$helm" template rm "$chart" --set replicaCount=-1 >/tmp/chart_helm_test.$$ 2>&1; then
  echo "FAIL: helm accepted replicaCount=-1; values.schema.json is not enforced"; fail=1
fi
echo "+ helm template --kube-version 1.24.0 (must fail: the CRD's CEL rules need 1.25)"
if "$helm" template rm "$chart" --kube-version 1.24.0 >/tmp/chart_helm_test.$$ 2>&1; then
  echo "FAIL: helm rendered the chart for Kubernetes 1.24; Chart.yaml's kubeVersion is not enforced"
  fail=1
fi
run "$helm" template rm "$chart" --kube-version 1.25.0
rm -f /tmp/chart_helm_test.$$
[[ $fail -eq 0 ]] && echo "chart_helm_test: helm lint and helm template pass"
exit $fail
