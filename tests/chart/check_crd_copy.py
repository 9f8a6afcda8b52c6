#!/usr/bin/env python3
"""chart_crd_copy_test: helm/ringmaster/crds/ holds exactly the files of crds/ (trainingjob.yaml,
experiment.yaml), each byte-equal to its source (crds/ is the one source of truth). Fix:
cp crds/*.yaml helm/ringmaster/crds/.

Usage: check_crd_copy.py REPO_ROOT
"""
import difflib
import os
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    sources = os.path.join(root, "crds")
    chart_crds = os.path.join(root, "helm", "ringmaster", "crds")
    failures = []
    want_names = sorted(os.listdir(sources)) if os.path.isdir(sources) else []
    if "trainingjob.yaml" not in want_names or "experiment.yaml" not in want_names:
        failures.append(f"{sources} must hold trainingjob.yaml and experiment.yaml, holds "
                        f"{want_names}")
    names = sorted(os.listdir(chart_crds)) if os.path.isdir(chart_crds) else []
    if names != want_names:
        failures.append(f"{chart_crds} must hold exactly {want_names}, holds {names}")
    if not failures:
        for name in want_names:
            with open(os.path.join(sources, name), "rb") as f:
                want = f.read()
            with open(os.path.join(chart_crds, name), "rb") as f:
                got = f.read()
            if want != got:
                diff = difflib.unified_diff(
                    want.decode("utf-8", "replace").splitlines(),
                    got.decode("utf-8", "replace").splitlines(),
                    f"crds/{name}", f"helm/ringmaster/crds/{name}", lineterm="")
                failures.append(f"the chart's {name} differs from crds/{name} "
                                "(cp crds/*.yaml helm/ringmaster/crds/):\n" +
                                "\n".join(list(diff)[:40]))
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"chart_crd_copy_test: {chart_crds} equals {sources} ({', '.join(want_names)})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
