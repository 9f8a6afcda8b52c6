#!/usr/bin/env python3
"""chart_values_test: helm/ringmaster/values.yaml validates against values.schema.json (draft-07),
every value has a comment and a schema entry, and each value in BAD is rejected.

Usage: check_values.py REPO_ROOT
"""
import copy
import json
import os
import re
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:
    sys.exit(f"chart_values_test: {e}; install python3-jsonschema python3-yaml (scripts/setup)")

# (what, path in values, bad value): each must make validation fail.
BAD = [
    ("negative replicas", "replicaCount", -1),
    ("too many replicas", "replicaCount", 50),
    ("replicas as a string", "replicaCount", "2"),
    ("two replicas without leader election", "leaderElection.enabled", False),
    ("unknown pull policy", "image.pullPolicy", "Sometimes"),
    ("image with a space", "image.repository", "ringmaster/operator latest"),
    ("port out of range", "metricsPort", 70000),
    ("port zero", "healthPort", 0),
    ("namespace not a DNS label", "watchNamespace", "Bad_Namespace"),
    ("negative qps", "qps", -1),
    ("zero workers", "workers", 0),
    ("unknown log level", "logLevel", "verbose"),
    ("CPU that is not a quantity", "resources.limits.cpu", "lots"),
    ("resource name typo", "resources.limits.cpus", "1"),
    ("wildcard MPI namespace", "rbac.mpiNamespaces", ["*"]),
    ("interval without unit", "serviceMonitor.interval", "30"),
    ("label value not a string", "podMonitor.labels", {"release": 1}),
    ("unknown service type", "metricsService.type", "Headless"),
    ("test timeout too short", "helmTest.timeoutSeconds", 5),
    ("relative test dataset path", "helmTest.datasetPath", "data/fashion-mnist"),
    ("misspelt top-level key", "replicas", 2),
    ("misspelt nested key", "gangScheduling.volcanoo", True),
]


def set_path(values, path, value):
    keys = path.split(".")
    node = values
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value


def schema_node(schema, root, path):
    """The schema node for a values path, following properties and local $refs."""
    node = schema
    for key in path:
        while "$ref" in node:
            node = resolve(root, node["$ref"])
        props = node.get("properties", {})
        if key not in props:
            return None
        node = props[key]
    while "$ref" in node:
        node = resolve(root, node["$ref"])
    return node


def resolve(root, ref):
    assert ref.startswith("#/"), ref
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def leaf_paths(values, prefix=()):
    for k, v in values.items():
        path = prefix + (k,)
        yield path
        # Maps of free-form data (labels, resources) are bounded by their parent's schema.
        if isinstance(v, dict) and v and k not in ("resources",):
            yield from leaf_paths(v, path)


def comment_problems(text):
    """Keys in values.yaml whose line has no comment directly above it (resources' body is
    covered by the comment on `resources`)."""
    problems = []
    lines = text.split("\n")
    inside_free_block = None
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)([A-Za-z][\w-]*):", line)
        if not m:
            continue
        indent = len(m.group(1))
        if inside_free_block is not None and indent > inside_free_block:
            continue
        inside_free_block = indent if m.group(2) == "resources" else None
        prev = lines[i - 1].strip() if i > 0 else ""
        if not prev.startswith("#"):
            problems.append(f"values.yaml:{i + 1}: '{m.group(2)}' has no comment above it")
    return problems


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    chart = os.path.join(sys.argv[1], "helm", "ringmaster")
    with open(os.path.join(chart, "values.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    with open(os.path.join(chart, "values.yaml"), encoding="utf-8") as f:
        text = f.read()
    values = yaml.safe_load(text)
    failures = []

    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    for err in validator.iter_errors(values):
        failures.append(f"values.yaml does not validate: {'.'.join(map(str, err.path))}: "
                        f"{err.message}")
    if schema.get("additionalProperties") is not False:
        failures.append("values.schema.json: the top level must set additionalProperties: false")

    for path in leaf_paths(values):
        node = schema_node(schema, schema, path)
        if node is None:
            failures.append(f"values.schema.json has no entry for {'.'.join(path)}")
        elif not any(k in node for k in ("type", "enum", "const", "oneOf", "anyOf", "allOf")):
            failures.append(f"values.schema.json does not bound {'.'.join(path)}")
    failures += comment_problems(text)

    for what, path, bad in BAD:
        broken = copy.deepcopy(values)
        set_path(broken, path, bad)
        if validator.is_valid(broken):
            failures.append(f"bad value accepted: {what} ({path}={bad!r})")
        else:
            print(f"ok: rejected {what} ({path}={bad!r})")

    for f in failures:
        print("FAIL:", f)
    print(f"chart_values_test: {len(BAD)} bad values tried, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
