#!/usr/bin/env python3
"""chart_policy_test: lints (`helm lint --strict`) and renders (`helm template`) helm/ringmaster
under several value sets (helm: $RM_HELM, else on PATH; scripts/install-helm installs it) and
checks the manifests:
- RBAC is least privilege: each (apiGroup, resource) the operator touches has exactly the verbs
  it uses (ALLOWED), no wildcards, no pods/exec or other subresources, no Secret reads at all,
  no Secret writes in a cluster-wide binding, PodGroup rules only when gang scheduling is on,
  Leases only in the release namespace, and the helm-test ServiceAccount may only read TrainingJobs;
- every pod (operator Deployment, helm-test Pod) runs under the restricted Pod Security
  Standard (non-root, uid 65532, no privilege escalation, drop ALL, read-only root filesystem,
  seccomp RuntimeDefault, no host namespaces or hostPath);
- the operator's args, probes, ports and replicas follow the values, everything carries the
  app.kubernetes.io/* labels, and optional objects appear exactly when enabled.

Usage: check_policy.py REPO_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

RELEASE, NAMESPACE = "rm", "ringmaster"

# What the operator calls (operator/reconciler.cc, controller.cc, search_reconciler.cc,
# search_controller.cc, lib/kube leader election and event recorder); helm_local_e2e_test reads the calls it saw off the API server's log and holds
# the chart's grants to them. A rule may grant a subset, never more.
ALLOWED = {
    ("ringmaster.dev", "trainingjobs"): {"list", "watch", "create", "delete"},
    ("ringmaster.dev", "trainingjobs/status"): {"update", "patch"},
    ("ringmaster.dev", "trainingjobs/finalizers"): {"update"},
    ("ringmaster.dev", "experiments"): {"list", "watch"},
    ("ringmaster.dev", "experiments/status"): {"update"},
    ("ringmaster.dev", "experiments/finalizers"): {"update"},
    ("", "pods"): {"get", "list", "watch", "create", "delete"},
    ("", "services"): {"get", "list", "watch", "create"},
    ("", "configmaps"): {"get", "list", "watch", "create"},
    # Never read: the operator creates an MPI job's <job>-ssh and takes AlreadyExists as its own.
    ("", "secrets"): {"create"},
    ("", "events"): {"create", "patch"},
    # A job's NetworkPolicy, created with its pods (read when one of its name exists: only the
    # job's own is kept); garbage collection deletes it.
    ("networking.k8s.io", "networkpolicies"): {"create", "get"},
    ("coordination.k8s.io", "leases"): {"get", "create", "update"},
    ("scheduling.volcano.sh", "podgroups"): {"create", "get"},
    ("scheduling.x-k8s.io", "podgroups"): {"create", "get"},
}
SECRET_WRITES = {"create", "update", "patch", "delete", "deletecollection"}
REQUIRED_LABELS = ["app.kubernetes.io/name", "app.kubernetes.io/instance",
                   "app.kubernetes.io/version", "app.kubernetes.io/managed-by",
                   "app.kubernetes.io/part-of"]

SCENARIOS = {
    "defaults": {},
    "namespaced": {"watchNamespace": "team-a"},
    "everything-on": {
        "gangScheduling": {"volcano": True, "schedulerPlugins": True},
        "serviceMonitor": {"enabled": True, "labels": {"release": "kps"}},
        "podMonitor": {"enabled": True},
        "rbac": {"mpiNamespaces": ["team-a", "team-b"]},
        "podAnnotations": {"example.com/a": "b"},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "imagePullSecrets": [{"name": "regcred"}],
        "trainerImage": "registry.example.com/ml/trainer:7",
    },
    "single-replica": {
        "replicaCount": 1, "leaderElection": {"enabled": False},
        "serviceAccount": {"create": False, "name": "existing-sa"},
        "dashboard": {"enabled": False}, "metricsService": {"enabled": False},
    },
}


def find_helm():
    """The helm binary: $RM_HELM, else helm on PATH; exits 1 saying how to install it."""
    helm = os.environ.get("RM_HELM") or shutil.which("helm")
    if not helm or not os.access(helm, os.X_OK):
        sys.exit("FAIL: helm is not installed (scripts/install-helm installs the pinned one)")
    return helm


def deep_merge(base, overrides):
    """values.yaml with `overrides` merged in, as helm merges -f files: maps key by key."""
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def helm_with_values(args, overrides):
    """Runs helm `args` plus `-f <overrides as a file>`; its stdout (CalledProcessError on failure)."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump(overrides, f)
    try:
        return subprocess.run([find_helm()] + args + ["-f", f.name], check=True,
                              capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)


def render(chart, overrides):
    """`helm template` of the chart with `overrides`: (helm.sh/hook annotation, object) pairs."""
    out = helm_with_values(["template", RELEASE, chart, "-n", NAMESPACE], overrides)
    docs = []
    for doc in yaml.safe_load_all(out):
        if doc:
            docs.append((doc.get("metadata", {}).get("annotations", {}).get("helm.sh/hook", ""),
                         doc))
    return docs


def crd_schema_failures(job, root, what, crd_file="trainingjob.yaml"):
    """Why the API server would not take `job` (a TrainingJob, or the kind of `crd_file`) as
    written: it rejects what the CRD schema (crds/<crd_file> under `root`) forbids and silently
    prunes unknown fields, so `job` must validate and name only fields the schema knows. Empty
    when it would."""
    import jsonschema  # python3-jsonschema (scripts/setup)
    with open(os.path.join(root, "crds", crd_file), encoding="utf-8") as f:
        crd = yaml.safe_load(f)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    failures = []
    # OpenAPI v3.0 schemas follow draft 4 (boolean exclusiveMinimum).
    for err in jsonschema.Draft4Validator(schema).iter_errors(job):
        failures.append(f"{what}: {'.'.join(map(str, err.path))}: {err.message}")

    def walk(node, schema, path):
        if not isinstance(node, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        props = schema.get("properties")
        for key, value in node.items():
            if props is not None and key in props:
                walk(value, props[key], path + [key])
            elif isinstance(schema.get("additionalProperties"), dict):
                walk(value, schema["additionalProperties"], path + [key])
            elif props is not None and path != ["metadata"]:
                failures.append(f"{what}: {'.'.join(path + [key])} is not in the CRD schema "
                                "(the API server would drop it)")
    walk(job, schema, [])
    return failures


class Checker:
    def __init__(self, scenario, values, docs, chart):
        self.scenario = scenario
        self.values = values
        self.docs = [d for _, d in docs]
        self.chart = chart
        self.failures = []

    def fail(self, msg):
        self.failures.append(f"[{self.scenario}] {msg}")

    def of_kind(self, *kinds):
        return [d for d in self.docs if d.get("kind") in kinds]

    @staticmethod
    def name(d):
        return f"{d.get('kind')}/{d.get('metadata', {}).get('name')}"

    def is_test(self, d):
        return d.get("metadata", {}).get("annotations", {}).get("helm.sh/hook") == "test"

    # --- RBAC ---------------------------------------------------------------------------
    def rbac(self):
        v = self.values
        roles = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
                 for d in self.of_kind("Role", "ClusterRole")}
        cluster_bound = set()
        for b in self.of_kind("ClusterRoleBinding"):
            cluster_bound.add(b["roleRef"]["name"])
            if b["roleRef"]["kind"] != "ClusterRole":
                self.fail(f"{self.name(b)} binds a {b['roleRef']['kind']}")
        seen = set()
        for (kind, ns, name), role in roles.items():
            test_role = self.is_test(role)
            for rule in role.get("rules", []):
                groups, resources = rule.get("apiGroups", []), rule.get("resources", [])
                verbs = set(rule.get("verbs", []))
                for field in ("apiGroups", "resources", "verbs", "resourceNames",
                              "nonResourceURLs"):
                    if any("*" in str(x) for x in rule.get(field, [])):
                        self.fail(f"{kind}/{name}: wildcard in {field}: {rule}")
                if rule.get("nonResourceURLs"):
                    self.fail(f"{kind}/{name}: nonResourceURLs {rule['nonResourceURLs']}")
                for g in groups:
                    for r in resources:
                        seen.add((g, r))
                        if test_role:
                            if (g, r) != ("ringmaster.dev", "trainingjobs") or \
                                    not verbs <= {"get", "list", "watch"}:
                                self.fail(f"helm-test {kind}/{name} may {sorted(verbs)} {g}/{r}; "
                                          "it may only read trainingjobs")
                            continue
                        allowed = ALLOWED.get((g, r))
                        if allowed is None:
                            self.fail(f"{kind}/{name}: grants {g or 'core'}/{r}, which the "
                                      "operator does not use")
                        elif not verbs <= allowed:
                            self.fail(f"{kind}/{name}: {g or 'core'}/{r} verbs "
                                      f"{sorted(verbs - allowed)} beyond what the operator uses")
                        if r == "secrets" and verbs & SECRET_WRITES and \
                                kind == "ClusterRole" and name in cluster_bound:
                            self.fail(f"{kind}/{name}: Secret writes {sorted(verbs & SECRET_WRITES)}"
                                      " bound cluster-wide")
                        if r == "leases" and (kind != "Role" or ns != NAMESPACE):
                            self.fail(f"{kind}/{name}: Leases must be a Role in {NAMESPACE}")
        if not v["rbac"]["create"]:
            return
        gang = v["gangScheduling"]
        for flag, group in (("volcano", "scheduling.volcano.sh"),
                            ("schedulerPlugins", "scheduling.x-k8s.io")):
            if bool(gang[flag]) != ((group, "podgroups") in seen):
                self.fail(f"podgroups of {group} granted={not gang[flag]} but "
                          f"gangScheduling.{flag}={gang[flag]}")
        for needed in [("ringmaster.dev", "trainingjobs"), ("ringmaster.dev", "trainingjobs/status"),
                       ("ringmaster.dev", "experiments"), ("ringmaster.dev", "experiments/status"),
                       ("", "pods"), ("", "services"), ("", "configmaps"),
                       ("", "events"), ("coordination.k8s.io", "leases")]:
            if needed not in seen:
                self.fail(f"no rule grants {needed[0] or 'core'}/{needed[1]}")
        if v.get("watchNamespace"):
            cluster = self.of_kind("ClusterRole", "ClusterRoleBinding")
            if cluster:
                self.fail(f"watchNamespace set but cluster-wide RBAC rendered: "
                          f"{[self.name(d) for d in cluster]}")
        # Every binding's subjects are the operator's (or the test's) ServiceAccount.
        sa = v["serviceAccount"]["name"] or f"{RELEASE}-ringmaster"
        for b in self.of_kind("RoleBinding", "ClusterRoleBinding"):
            for s in b.get("subjects", []):
                if self.is_test(b):
                    continue
                if (s.get("kind"), s.get("name"), s.get("namespace")) != \
                        ("ServiceAccount", sa, NAMESPACE):
                    self.fail(f"{self.name(b)} binds {s}, not the operator's ServiceAccount {sa}")
        mpi = v["rbac"].get("mpiNamespaces") or []
        if bool(v.get("watchNamespace") or mpi) != (("", "secrets") in seen):
            self.fail(f"Secret create granted={('', 'secrets') in seen}, want it exactly where "
                      "MPI jobs may run (watchNamespace or rbac.mpiNamespaces)")
        if not v.get("watchNamespace"):
            got = sorted(b["metadata"]["namespace"] for b in self.of_kind("RoleBinding")
                         if b["roleRef"]["name"].endswith("-mpi-secrets"))
            if got != sorted(mpi):
                self.fail(f"MPI Secret-write RoleBindings in {got}, want {sorted(mpi)}")

    # --- pod security -------------------------------------------------------------------
    def pod_security(self, where, pod_spec):
        psc = pod_spec.get("securityContext") or {}
        for k in ("hostNetwork", "hostPID", "hostIPC"):
            if pod_spec.get(k):
                self.fail(f"{where}: {k}")
        for vol in pod_spec.get("volumes", []) or []:
            if "hostPath" in vol:
                self.fail(f"{where}: hostPath volume {vol.get('name')}")
        if (psc.get("seccompProfile") or {}).get("type") != "RuntimeDefault":
            self.fail(f"{where}: pod seccompProfile is not RuntimeDefault")
        containers = (pod_spec.get("containers") or []) + (pod_spec.get("initContainers") or [])
        if not containers:
            self.fail(f"{where}: no containers")
        for c in containers:
            csc = c.get("securityContext") or {}
            cw = f"{where} container {c.get('name')}"
            if not (csc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True):
                self.fail(f"{cw}: runAsNonRoot is not true")
            uid = csc.get("runAsUser", psc.get("runAsUser"))
            if uid != 65532:
                self.fail(f"{cw}: runAsUser {uid}, want 65532")
            if csc.get("allowPrivilegeEscalation") is not False:
                self.fail(f"{cw}: allowPrivilegeEscalation is not false")
            if csc.get("privileged"):
                self.fail(f"{cw}: privileged")
            if "ALL" not in ((csc.get("capabilities") or {}).get("drop") or []):
                self.fail(f"{cw}: capabilities do not drop ALL")
            if (csc.get("capabilities") or {}).get("add"):
                self.fail(f"{cw}: adds capabilities")
            if csc.get("readOnlyRootFilesystem") is not True:
                self.fail(f"{cw}: readOnlyRootFilesystem is not true")
            sp = (csc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
            if sp != "RuntimeDefault":
                self.fail(f"{cw}: seccompProfile {sp}")
            res = c.get("resources") or {}
            if not res.get("requests") or not res.get("limits"):
                self.fail(f"{cw}: resources need requests and limits")

    def pods(self):
        deployments = self.of_kind("Deployment")
        if len(deployments) != 1:
            self.fail(f"want one Deployment, got {len(deployments)}")
            return
        d = deployments[0]
        spec = d["spec"]["template"]["spec"]
        self.pod_security(self.name(d), spec)
        test_pods = [p for p in self.of_kind("Pod") if self.is_test(p)]
        if len(test_pods) != 1:
            self.fail(f"want one helm-test Pod, got {len(test_pods)}")
        for p in test_pods:
            self.pod_security(self.name(p), p["spec"])
        for p in self.of_kind("Pod"):
            if not self.is_test(p):
                self.fail(f"{self.name(p)}: a bare Pod outside the helm test")

    # --- the operator Deployment ----------------------------------------------------------
    def deployment(self):
        v = self.values
        for d in self.of_kind("Deployment"):
            if d["spec"]["replicas"] != v["replicaCount"]:
                self.fail(f"replicas {d['spec']['replicas']} != {v['replicaCount']}")
            sel = d["spec"]["selector"]["matchLabels"]
            labels = d["spec"]["template"]["metadata"]["labels"]
            if any(labels.get(k) != val for k, val in sel.items()):
                self.fail("the pod template does not carry the selector labels")
            c = d["spec"]["template"]["spec"]["containers"][0]
            args = c.get("args", [])
            # Jobs without spec.image run the worker image of the chart's own version by default.
            with open(os.path.join(self.chart, "Chart.yaml"), encoding="utf-8") as f:
                app_version = yaml.safe_load(f)["appVersion"]
            trainer_image = v["trainerImage"] or f"ringmaster/trainer:{app_version}"
            want = [f"--metrics-port={v['metricsPort']}", f"--health-port={v['healthPort']}",
                    f"--trainer-image={trainer_image}"]
            want.append("--leader-elect" if v["leaderElection"]["enabled"] else "--no-leader-elect")
            if v.get("watchNamespace"):
                want.append(f"--namespace={v['watchNamespace']}")
            for w in want:
                if w not in args:
                    self.fail(f"operator args {args} lack {w}")
            if not v.get("watchNamespace") and any(a.startswith("--namespace") for a in args):
                self.fail("--namespace set without watchNamespace")
            ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
            if ports.get("health") != v["healthPort"] or ports.get("metrics") != v["metricsPort"]:
                self.fail(f"container ports {ports}")
            for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
                get = (c.get(probe) or {}).get("httpGet") or {}
                if get.get("path") != path or get.get("port") not in ("health", v["healthPort"]):
                    self.fail(f"{probe} is {get}, want {path} on the health port")
            env = {e["name"]: e for e in c.get("env", [])}
            if ((env.get("POD_NAMESPACE") or {}).get("valueFrom") or {}).get("fieldRef", {}) \
                    .get("fieldPath") != "metadata.namespace":
                self.fail("POD_NAMESPACE (the Lease namespace) is not the pod's namespace")
            sa = d["spec"]["template"]["spec"].get("serviceAccountName")
            want_sa = v["serviceAccount"]["name"] or f"{RELEASE}-ringmaster"
            if sa != want_sa:
                self.fail(f"serviceAccountName {sa}, want {want_sa}")

    # --- labels and optional objects --------------------------------------------------------
    def labels_and_options(self):
        v = self.values
        for d in self.docs:
            labels = d.get("metadata", {}).get("labels") or {}
            missing = [k for k in REQUIRED_LABELS if k not in labels]
            if missing:
                self.fail(f"{self.name(d)} lacks labels {missing}")
        expect = {
            "ServiceMonitor": v["serviceMonitor"]["enabled"] and v["metricsService"]["enabled"],
            "PodMonitor": v["podMonitor"]["enabled"],
            "ServiceAccount": True,  # the test's, at least
        }
        for kind, want in expect.items():
            if bool(self.of_kind(kind)) != bool(want):
                self.fail(f"{kind} rendered={not want}, want {want}")
        services = [s for s in self.of_kind("Service")]
        if bool(services) != v["metricsService"]["enabled"]:
            self.fail(f"metrics Service rendered={bool(services)}")
        for sm in self.of_kind("ServiceMonitor"):
            eps = sm["spec"]["endpoints"]
            if [e.get("port") for e in eps] != ["metrics"] or not eps[0].get("honorLabels"):
                self.fail("ServiceMonitor must scrape port metrics with honorLabels (the job "
                          "counters' namespace is the TrainingJob's)")
        for pm in self.of_kind("PodMonitor"):
            exprs = pm["spec"]["selector"].get("matchExpressions", [])
            if {"key": "ringmaster.dev/job-name", "operator": "Exists"} not in exprs:
                self.fail("PodMonitor does not select pods with label ringmaster.dev/job-name")
            eps = pm["spec"]["podMetricsEndpoints"]
            if [e.get("port") for e in eps] != ["metrics"] or not eps[0].get("honorLabels"):
                self.fail("PodMonitor must scrape port metrics with honorLabels (a trainer's "
                          "trainingjob and rank are its own)")
            labelled = {(tuple(r.get("sourceLabels", [])), r.get("targetLabel"))
                        for r in eps[0].get("relabelings", [])}
            if (("__meta_kubernetes_pod_label_ringmaster_dev_job_name",), "trainingjob") \
                    not in labelled:
                self.fail("PodMonitor must label every series trainingjob from the pod's "
                          "ringmaster.dev/job-name (a user program's series are the job's too)")
        dashboards = [c for c in self.of_kind("ConfigMap")
                      if (c["metadata"].get("labels") or {}).get("grafana_dashboard") == "1"]
        if bool(dashboards) != v["dashboard"]["enabled"]:
            self.fail(f"dashboard ConfigMap rendered={bool(dashboards)}")
        with open(os.path.join(self.chart, "dashboards", "ringmaster.json"), encoding="utf-8") as f:
            want_dash = json.load(f)
        for c in dashboards:
            if json.loads(c["data"]["ringmaster.json"]) != want_dash:
                self.fail("the dashboard ConfigMap does not hold dashboards/ringmaster.json")

    def helm_test(self):
        tests = [d for d in self.docs if self.is_test(d)]
        jobs = [d for d in tests if d["kind"] == "TrainingJob"]
        if len(jobs) != 1:
            self.fail(f"want one helm-test TrainingJob, got {len(jobs)}")
            return
        spec = jobs[0]["spec"]
        self.test_job_matches_crd(jobs[0])
        if spec.get("replicas") != 2 or spec.get("backend") not in ("tcp", "gloo", "auto"):
            self.fail(f"helm-test job must be 2 CPU workers, got {spec}")
        if "nvidia.com/gpu" in json.dumps(spec.get("resources", {})):
            self.fail("helm-test job asks for GPUs")
        pod = [d for d in tests if d["kind"] == "Pod"][0]
        cmd = pod["spec"]["containers"][0].get("command", []) + \
            pod["spec"]["containers"][0].get("args", [])
        name = jobs[0]["metadata"]["name"]
        if "wait" not in cmd or "--for=jsonpath={.status.phase}=Succeeded" not in cmd or \
                f"trainingjob/{name}" not in cmd:
            self.fail(f"helm-test pod does not wait for {name} to succeed: {cmd}")
        # A job that fails must fail the test when it ends, not at the test's timeout: the pod
        # first waits for the end (completionTime, set on success and failure), then checks.
        inits = pod["spec"].get("initContainers", [])
        first = (inits[0].get("command", []) + inits[0].get("args", [])) if inits else []
        if "--for=jsonpath={.status.completionTime}" not in first or "--timeout=0s" not in cmd:
            self.fail(f"helm-test pod must wait for {name} to end, then check its phase at once: "
                      f"init {first}, main {cmd}")
        weights = {d["kind"]: int(d["metadata"]["annotations"].get("helm.sh/hook-weight", "0"))
                   for d in tests}
        if not weights["TrainingJob"] < weights["Pod"]:
            self.fail("the helm-test TrainingJob must be created before the waiting Pod")

    def test_job_matches_crd(self, job, what="helm-test TrainingJob"):
        root = os.path.dirname(os.path.dirname(self.chart))
        for failure in crd_schema_failures(job, root, what):
            self.fail(failure)

    def notes(self):
        """NOTES.txt points only at what a user of the packaged chart has: no paths of this
        repository, and its inline example job (between <<'EOF' and EOF) is a valid TrainingJob."""
        with open(os.path.join(self.chart, "templates", "NOTES.txt"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        for line in lines:
            if "examples/" in line or "dockerfiles/" in line:
                self.fail(f"NOTES.txt names a file of the repository, not of the chart: {line.strip()}")
        start = next((i for i, line in enumerate(lines) if line.rstrip().endswith("<<'EOF'")), None)
        if start is None:
            self.fail("NOTES.txt has no inline example job (kubectl apply -f - <<'EOF')")
            return
        end = next((i for i in range(start + 1, len(lines)) if lines[i].strip() == "EOF"), None)
        if end is None:
            self.fail("NOTES.txt: the example job has no closing EOF")
            return
        body = lines[start + 1:end]
        indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
        job = yaml.safe_load("\n".join(line[indent:] for line in body))
        if not isinstance(job, dict) or job.get("kind") != "TrainingJob":
            self.fail(f"NOTES.txt: the example is not a TrainingJob: {job!r}")
            return
        self.test_job_matches_crd(job, "NOTES.txt's example TrainingJob")

    def run(self):
        self.notes()
        self.rbac()
        self.pods()
        self.deployment()
        self.labels_and_options()
        self.helm_test()
        return self.failures


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    chart = os.path.join(sys.argv[1], "helm", "ringmaster")
    with open(os.path.join(chart, "values.yaml"), encoding="utf-8") as f:
        defaults = yaml.safe_load(f)
    find_helm()
    failures = []
    for scenario, overrides in SCENARIOS.items():
        values = deep_merge(defaults, overrides)
        try:
            helm_with_values(["lint", "--strict", chart], overrides)
        except subprocess.CalledProcessError as e:
            failures.append(f"[{scenario}] helm lint --strict failed: {e.stdout.strip()} {e.stderr.strip()}")
        try:
            docs = render(chart, overrides)
        except subprocess.CalledProcessError as e:
            failures.append(f"[{scenario}] helm template failed: {e.stderr.strip()}")
            continue
        found = Checker(scenario, values, docs, chart).run()
        print(f"{scenario}: {len(docs)} objects, {len(found)} failure(s)")
        failures += found
    for f in failures:
        print("FAIL:", f)
    print(f"chart_policy_test (helm lint --strict, helm template): {len(SCENARIOS)} value sets, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
