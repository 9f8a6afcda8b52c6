#!/usr/bin/env python3
"""chart_rbac_envtest: the chart's RBAC on a real kube-apiserver (RINGMASTER_ENVTEST names the
envtest directory; exit 77, skipped, when it is unset). Renders helm/ringmaster with `helm
template` (check_policy.render), applies its ServiceAccount, Roles and bindings, and
then, with a token of the operator's ServiceAccount (`kubectl create token`):
- get/list/watch of Secrets is forbidden (403) in another namespace, in an MPI namespace and
  cluster-wide: the operator cannot read the cluster's Secrets;
- creating an MPI job's SSH Secret (<job>-ssh, kubernetes.io/ssh-auth) works where MPI jobs may
  run, and is forbidden elsewhere;
- the token does work (listing pods is allowed), so a 403 is RBAC's answer.
Two value sets: all namespaces with rbac.mpiNamespaces, and watchNamespace.

Usage: check_rbac_envtest.py REPO_ROOT
"""
import os
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_policy  # noqa: E402  (render(): helm template)

RBAC_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
SA = f"{check_policy.RELEASE}-ringmaster"
NS = check_policy.NAMESPACE

SSH_SECRET = """apiVersion: v1
kind: Secret
metadata:
  name: {name}
  namespace: {ns}
type: kubernetes.io/ssh-auth
data:
  ssh-privatekey: a2V5
"""


class Cluster:
    def __init__(self, envtest, run_dir):
        self.envtest = envtest
        self.run_dir = run_dir
        out = subprocess.run([os.path.join(envtest, "start"), run_dir], check=True,
                             capture_output=True, text=True, env={**os.environ, "KCM": "0"})
        self.admin = out.stdout.strip().splitlines()[-1]
        self.failures = []

    def stop(self):
        subprocess.run([os.path.join(self.envtest, "stop"), self.run_dir],
                       capture_output=True, env={**os.environ, "WIPE": "1"})

    def kubectl(self, *args, kubeconfig=None, stdin=None):
        return subprocess.run(["kubectl", "--kubeconfig", kubeconfig or self.admin, *args],
                              input=stdin, capture_output=True, text=True)

    def admin_ok(self, *args, stdin=None):
        r = self.kubectl(*args, stdin=stdin)
        if r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def operator_kubeconfig(self):
        """A kubeconfig that authenticates with a token of the operator's ServiceAccount only."""
        token = self.admin_ok("create", "token", SA, "-n", NS).strip()
        server = self.admin_ok("config", "view", "--minify", "-o",
                               "jsonpath={.clusters[0].cluster.server}")
        path = os.path.join(self.run_dir, "operator.kubeconfig")
        with open(path, "w", encoding="utf-8") as f:
            yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "op",
                "clusters": [{"name": "envtest", "cluster": {
                    "server": server,
                    "certificate-authority": os.path.join(self.run_dir, "pki", "ca.crt")}}],
                "users": [{"name": "op", "user": {"token": token}}],
                "contexts": [{"name": "op", "context": {"cluster": "envtest", "user": "op"}}],
            }, f)
        return path

    def expect(self, what, allowed, *args, kubeconfig, stdin=None):
        r = self.kubectl(*args, kubeconfig=kubeconfig, stdin=stdin)
        if allowed and r.returncode != 0:
            self.failures.append(f"{what}: want allowed, got: {r.stderr.strip()}")
        elif not allowed and (r.returncode == 0 or "Forbidden" not in r.stderr):
            # kubectl prints `Error from server (Forbidden): ...` for an HTTP 403.
            self.failures.append(f"{what}: want 403 Forbidden, got rc={r.returncode} "
                                 f"{(r.stdout + r.stderr).strip()}")
        print(f"{'ok  ' if len(self.failures) == self.seen else 'FAIL'} {what}")
        self.seen = len(self.failures)

    seen = 0


def scenario(cluster, chart, name, overrides, mpi_ns, other_ns):
    print(f"--- {name}: {overrides}")
    docs = [d for _, d in check_policy.render(chart, overrides)
            if d.get("kind") in RBAC_KINDS and
            "helm.sh/hook" not in (d["metadata"].get("annotations") or {})]
    for ns in [NS, *mpi_ns, other_ns]:
        cluster.kubectl("create", "namespace", ns)
    for ns in [*mpi_ns, other_ns]:
        cluster.kubectl("create", "secret", "generic", "db-password", "-n", ns,
                        "--from-literal=password=hunter2")
    cluster.admin_ok("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    op = cluster.operator_kubeconfig()
    x = cluster.expect
    x(f"{name}: list pods in {mpi_ns[0]} (the token works)", True,
      "get", "pods", "-n", mpi_ns[0], kubeconfig=op)
    x(f"{name}: get secret {other_ns}/db-password", False,
      "get", "secret", "db-password", "-n", other_ns, kubeconfig=op)
    x(f"{name}: list secrets in {other_ns}", False, "get", "secrets", "-n", other_ns, kubeconfig=op)
    x(f"{name}: list secrets in all namespaces", False, "get", "secrets", "-A", kubeconfig=op)
    x(f"{name}: watch secrets in all namespaces", False,
      "get", "secrets", "-A", "--watch", "--request-timeout=5s", kubeconfig=op)
    for ns in mpi_ns:
        x(f"{name}: get secret {ns}/db-password", False,
          "get", "secret", "db-password", "-n", ns, kubeconfig=op)
        x(f"{name}: list secrets in {ns}", False, "get", "secrets", "-n", ns, kubeconfig=op)
        x(f"{name}: create the ssh Secret {ns}/fmnist-ssh", True, "create", "-f", "-",
          kubeconfig=op, stdin=SSH_SECRET.format(name="fmnist-ssh", ns=ns))
    x(f"{name}: create a Secret in {other_ns}", False, "create", "-f", "-",
      kubeconfig=op, stdin=SSH_SECRET.format(name="fmnist-ssh", ns=other_ns))
    cluster.admin_ok("delete", "-f", "-", "--wait=false", stdin=yaml.safe_dump_all(docs))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    envtest = os.environ.get("RINGMASTER_ENVTEST")
    if not envtest:
        print("SKIP: RINGMASTER_ENVTEST is not set (the envtest control plane's directory)")
        return 77
    chart = os.path.join(sys.argv[1], "helm", "ringmaster")
    with tempfile.TemporaryDirectory(prefix="rm-rbac-envtest-") as run_dir:
        cluster = Cluster(os.path.abspath(envtest), run_dir)
        try:
            scenario(cluster, chart, "all-namespaces", {"rbac": {"mpiNamespaces": ["team-a"]}},
                     ["team-a"], "other")
            scenario(cluster, chart, "watchNamespace", {"watchNamespace": "team-b"},
                     ["team-b"], "other-b")
        finally:
            cluster.stop()
    for f in cluster.failures:
        print("FAIL:", f)
    print(f"chart_rbac_envtest: {len(cluster.failures)} failure(s)")
    return 1 if cluster.failures else 0


if __name__ == "__main__":
    sys.exit(main())
