#!/usr/bin/env python3
"""examples_check_test: every TrainingJob and Experiment in examples/*.yaml is one the API
server takes as written (validates against crds/trainingjob.yaml's or crds/experiment.yaml's
schema and names no field it would prune); an Experiment's trial template is checked as the
TrainingJob its trials are.

Usage: check_examples.py REPO_ROOT
"""
import glob
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_policy import crd_schema_failures  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    failures, jobs = [], 0
    for path in sorted(glob.glob(os.path.join(root, "examples", "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        what = os.path.relpath(path, root)
        for doc in docs:
            if doc.get("kind") == "TrainingJob":
                jobs += 1
                failures += crd_schema_failures(doc, root, what)
            elif doc.get("kind") == "Experiment":
                jobs += 1
                failures += crd_schema_failures(doc, root, what, "experiment.yaml")
                trial = {"apiVersion": doc.get("apiVersion"), "kind": "TrainingJob",
                         "metadata": {"name": doc["metadata"]["name"] + "-trial-0"},
                         "spec": doc.get("spec", {}).get("trialTemplate", {}).get("spec", {})}
                failures += crd_schema_failures(trial, root, what + " (trialTemplate)")
    for f in failures:
        print("FAIL:", f)
    print(f"examples_check_test: {jobs} TrainingJob(s) and Experiment(s) in examples/, {len(failures)} failure(s)")
    return 1 if failures or jobs == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
