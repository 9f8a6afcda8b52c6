#!/usr/bin/env python3
"""chart_crd_copy_test: helm/ringmaster/crds/ holds exactly trainingjob.yaml, byte-equal to
crds/trainingjob.yaml (the one source of truth). Fix: cp crds/trainingjob.yaml
helm/ringmaster/crds/.

Usage: check_crd_copy.py REPO_ROOT
"""
import difflib
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    source = os.path.join(root, "crds", "trainingjob.yaml")
    chart_crds = os.path.join(root, "helm", "ringmaster", "crds")
    failures = []
    if not os.path.isfile(source):
        failures.append(f"{source} does not exist")
    names = sorted(os.listdir(chart_crds)) if os.path.isdir(chart_crds) else []
    if names != ["trainingjob.yaml"]:
        failures.append(f"{chart_crds} must hold exactly trainingjob.yaml, holds {names}")
    copy = os.path.join(chart_crds, "trainingjob.yaml")
    if not failures:
        with open(source, "rb") as f:
            want = f.read()
        with open(copy, "rb") as f:
            got = f.read()
        if want != got:
            diff = difflib.unified_diff(
                want.decode("utf-8", "replace").splitlines(),
                got.decode("utf-8", "replace").splitlines(),
                "crds/trainingjob.yaml", "helm/ringmaster/crds/trainingjob.yaml", lineterm="")
            failures.append("the chart's CRD differs from crds/trainingjob.yaml "
                            "(cp crds/trainingjob.yaml helm/ringmaster/crds/):\n" +
                            "\n".join(list(diff)[:40]))
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"chart_crd_copy_test: {copy} equals {source} ({os.path.getsize(source)} bytes)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
