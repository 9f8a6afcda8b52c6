#!/usr/bin/env python3
"""dashboard_check_test: helm/ringmaster/dashboards/ringmaster.json is a Grafana dashboard
(schemaVersion 39; datasource, namespace, trainingjob and experiment variables) whose every panel has a datasource
and at least one PromQL target; every metric an expression names is registered by the code
(trainer/ and operator/ sources: r.counter/gauge/histogram("ringmaster_..."); the kubelet's
cAdvisor families in local/kubelet), rate() and
increase() only take counters or histogram series, trainer queries honour $namespace and
$trainingjob (pod queries its worker pods, search queries $experiment) and never use the label `job` (Prometheus's own: the scrape job),
and, when promtool is on PATH, every expression parses as PromQL. It catches typos before the
Prometheus integration test does.

Usage: check_dashboard.py REPO_ROOT
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

METRIC = re.compile(r"\b(?:ringmaster|container)_[a-z0-9_]+")
# The local kubelet's cAdvisor families (local/kubelet): MetricFamily{"name", "help", Type, ...}.
CADVISOR = re.compile(r"MetricFamily\s*\w*\{\s*\"(container_[a-z0-9_]+)\",\s*\"[^\"]*\",\s*"
                      r"prometheus::MetricType::(Counter|Gauge)", re.S)
REGISTERED = re.compile(r"\.(counter|gauge|histogram|summary)\(\s*\"(ringmaster_[a-z0-9_]+)\"", re.S)
RATE_ARG = re.compile(r"\b(rate|irate|increase)\(\s*((?:ringmaster|container)_[a-z0-9_]+)")
# What Grafana substitutes, for promtool.
GRAFANA_VARS = {"$__rate_interval": "1m", "$__range": "1h", "$__interval": "30s",
                "$namespace": ".*", "$trainingjob": ".*", "$experiment": ".*"}


def exported_metrics(root):
    """{series name: kind} for every metric registered in trainer/ and operator/ (not tests)."""
    out = {}
    for component in ("trainer", "operator", "launcher"):
        for dirpath, dirnames, files in os.walk(os.path.join(root, component)):
            dirnames[:] = [d for d in dirnames if d != "tests"]
            for f in files:
                if not f.endswith((".cc", ".h")):
                    continue
                with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                    for kind, name in REGISTERED.findall(fh.read()):
                        if kind in ("histogram", "summary"):
                            for suffix in ("_bucket", "_sum", "_count"):
                                out[name + suffix] = kind
                        else:
                            out[name] = kind
    # The pods' CPU and memory: a kubelet's cAdvisor series, which the local kubelet serves too.
    for dirpath, dirnames, files in os.walk(os.path.join(root, "local", "kubelet")):
        dirnames[:] = [d for d in dirnames if d != "tests"]
        for f in files:
            if f.endswith((".cc", ".h")):
                with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                    for name, kind in CADVISOR.findall(fh.read()):
                        out[name] = kind.lower()
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    path = os.path.join(root, "helm", "ringmaster", "dashboards", "ringmaster.json")
    failures = []
    try:
        with open(path, encoding="utf-8") as f:
            dash = json.load(f)
    except (OSError, ValueError) as e:
        print(f"FAIL: {path}: {e}")
        return 1
    if "{{job}}" in json.dumps(dash):
        failures.append("a legend shows {{job}}, Prometheus's scrape job; the trainers' label is "
                        "`trainingjob`")
    exported = exported_metrics(root)
    if not exported:
        failures.append("found no registered ringmaster_* metrics in trainer/ or operator/")

    if dash.get("schemaVersion") != 39:
        failures.append(f"schemaVersion {dash.get('schemaVersion')}, want 39")
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    for name in ("datasource", "namespace", "trainingjob", "experiment"):
        if name not in variables:
            failures.append(f"template variable ${name} is missing")
    if variables.get("datasource", {}).get("type") != "datasource":
        failures.append("$datasource must be a datasource variable")

    exprs = []  # (panel title, expr)
    for v in variables.values():
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query" and q:
            for name in METRIC.findall(q):
                if name not in exported:
                    failures.append(f"variable ${v['name']}: metric {name} is not exported")

    ids = set()
    panels = dash.get("panels", [])
    for p in panels:
        for inner in p.get("panels", []):
            panels.append(inner)
    for p in panels:
        title = p.get("title", "?")
        if p.get("id") in ids:
            failures.append(f"panel '{title}': duplicate id {p.get('id')}")
        ids.add(p.get("id"))
        if "gridPos" not in p:
            failures.append(f"panel '{title}': no gridPos")
        if p.get("type") == "row":
            continue
        ds = p.get("datasource") or {}
        if ds.get("uid") != "${datasource}":
            failures.append(f"panel '{title}': datasource is {ds}, want uid ${{datasource}}")
        if not p.get("description"):
            failures.append(f"panel '{title}': no description")
        targets = [t for t in p.get("targets", []) if t.get("expr")]
        if not targets:
            failures.append(f"panel '{title}': no target with an expr")
        for t in targets:
            exprs.append((title, t["expr"]))

    for title, expr in exprs:
        names = METRIC.findall(expr)
        if not names:
            failures.append(f"panel '{title}': expr names no ringmaster_ or container_ metric: "
                            f"{expr}")
        for name in names:
            if name not in exported:
                failures.append(f"panel '{title}': metric {name} is not exported by the code")
        for fn, name in RATE_ARG.findall(expr):
            if name in exported and exported[name] == "gauge":
                failures.append(f"panel '{title}': {fn}() of gauge {name}")
        if expr.count("(") != expr.count(")") or expr.count("{") != expr.count("}"):
            failures.append(f"panel '{title}': unbalanced brackets: {expr}")
        if any(n.startswith("ringmaster_trainer_") for n in names) and \
                ('trainingjob=~"$trainingjob"' not in expr or 'namespace=~"$namespace"' not in expr):
            failures.append(f"panel '{title}': trainer query ignores $namespace/$trainingjob: {expr}")
        if any(n.startswith("container_") for n in names) and \
                ('pod=~"($trainingjob)-worker-[0-9]+"' not in expr or
                 'namespace=~"$namespace"' not in expr):
            failures.append(f"panel '{title}': pod query ignores $namespace/$trainingjob's worker "
                            f"pods: {expr}")
        if any(n.startswith("ringmaster_operator_jobs_") for n in names) and \
                'namespace=~"$namespace"' not in expr:
            failures.append(f"panel '{title}': job counter query ignores $namespace: {expr}")
        if any(n.startswith("ringmaster_operator_experiment_") for n in names) and \
                ('namespace=~"$namespace"' not in expr or 'experiment=~"$experiment"' not in expr):
            failures.append(f"panel '{title}': search query ignores $namespace/$experiment: {expr}")
        if re.search(r"(?<![a-z_])job\b", expr):
            failures.append(f"panel '{title}': uses label `job`, which is Prometheus's scrape job "
                            f"(the trainers' is `trainingjob`): {expr}")

    promtool = shutil.which("promtool")
    if promtool and exprs:
        rules = {"groups": [{"name": "dashboard", "rules": []}]}
        for i, (_, expr) in enumerate(exprs):
            for var, value in GRAFANA_VARS.items():
                expr = expr.replace(var, value)
            rules["groups"][0]["rules"].append({"record": f"dashboard:expr_{i}", "expr": expr})
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(rules, f)  # JSON is YAML
        try:
            res = subprocess.run([promtool, "check", "rules", f.name], capture_output=True,
                                 text=True)
        finally:
            os.unlink(f.name)
        if res.returncode != 0:
            failures.append("promtool check rules on the dashboard's expressions:\n" +
                            res.stdout + res.stderr)
        else:
            print(f"promtool: {len(exprs)} expressions parse")

    for title, expr in exprs:
        print(f"query [{title}]: {expr}")
    for f in failures:
        print("FAIL:", f)
    print(f"dashboard_check_test: {len(panels)} panels, {len(exprs)} queries, "
          f"{len(exported)} exported series names, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
