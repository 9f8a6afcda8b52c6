#!/usr/bin/env python3
"""reference_check_test: docs/trainingjob-reference.md documents exactly the fields of
crds/trainingjob.yaml's schema (every path under spec and status has a row, every row names a
path the schema has), and each row carries the field's schema default, enum values and bounds.

Paths follow the rule stated at the top of the reference: one row per property under
spec and under status; objects are descended into; for an array whose items declare properties
each of them is `<array>[].<name>`; a map (additionalProperties), an object or array item with
no declared properties (x-kubernetes-preserve-unknown-fields: a core/v1 type passed through) and
an array of scalars are one row each. A row is a markdown table line whose first cell is the
path in backticks, then type, default, limits and description: the schema's default must be in
the default cell, its enum values and bounds in the limits cell.

Usage: check_reference.py REPO_ROOT
"""
import os
import re
import sys

import yaml

REFERENCE = os.path.join("docs", "trainingjob-reference.md")
CRD = os.path.join("crds", "trainingjob.yaml")
ROW = re.compile(r"^\|\s*`((?:spec|status)(?:\.|\[\])[^`]*)`\s*\|(.*)$")


def schema_paths(schema, path, out):
    """(path, schema) for every documented path under `schema`, in schema order."""
    for name, sub in (schema.get("properties") or {}).items():
        child = f"{path}.{name}"
        out.append((child, sub))
        schema_paths(sub, child, out)
    items = schema.get("items") or {}
    if schema.get("type") == "array" and items.get("properties"):
        schema_paths(items, f"{path}[]", out)
    return out


def crd_fields(root):
    with open(os.path.join(root, CRD), encoding="utf-8") as f:
        crd = yaml.safe_load(f)
    version = crd["spec"]["versions"][0]
    top = version["schema"]["openAPIV3Schema"]["properties"]
    fields = []
    for name in ("spec", "status"):
        schema_paths(top[name], name, fields)
    return fields


def reference_rows(root):
    """{path: [rest of the row, ...]} for every field row of the reference."""
    rows = {}
    with open(os.path.join(root, REFERENCE), encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line.strip())
            if m:
                rows.setdefault(m.group(1), []).append(m.group(2))
    return rows


def literal(value):
    """How a schema value is written in the reference (YAML's spelling)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def mentions(text, value):
    """Whether `value` appears in `text` as a token of its own (not inside a longer word)."""
    token = re.escape(literal(value))
    return re.search(rf"(?<![\w.-]){token}(?![\w.-]|\.\d)", text) is not None


def row_failures(path, schema, row):
    """What the row of `path` (the cells after the path) lacks of the schema's default (in the
    default cell), enum values and bounds (in the limits cell)."""
    cells = [c.strip() for c in row.split("|")]
    if len(cells) < 4:
        return [f"{REFERENCE}: row `{path}` needs type, default, limits and description cells"]
    default_cell, limits_cell = cells[1], cells[2]
    failures = []
    if "default" in schema and not mentions(default_cell, schema["default"]):
        failures.append(f"{REFERENCE}: row `{path}`: its default cell does not give the schema's "
                        f"default {literal(schema['default'])}")
    checks = []
    for value in schema.get("enum") or []:
        checks.append(("enum value", value))
    for key in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
        if key in schema:
            checks.append((key, schema[key]))
    items = schema.get("items") or {}
    if schema.get("type") == "array" and not items.get("properties"):
        for key in ("minimum", "maximum"):
            if key in items:
                checks.append((f"items' {key}", items[key]))
    for what, value in checks:
        if not mentions(limits_cell, value):
            failures.append(f"{REFERENCE}: row `{path}`: its limits cell does not give the "
                            f"schema's {what} {literal(value)}")
    return failures


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    fields = crd_fields(root)
    rows = reference_rows(root)
    failures = []
    known = set()
    for path, schema in fields:
        known.add(path)
        if path not in rows:
            failures.append(f"{REFERENCE}: no row for {path} (a field of {CRD})")
            continue
        if len(rows[path]) > 1:
            failures.append(f"{REFERENCE}: {len(rows[path])} rows for {path}")
        failures += row_failures(path, schema, rows[path][0])
    for path in rows:
        if path not in known:
            failures.append(f"{REFERENCE}: row for {path}, which {CRD} does not have")
    for f in failures:
        print("FAIL:", f)
    print(f"reference_check_test: {len(fields)} field(s) in {CRD}, {len(rows)} row(s) in "
          f"{REFERENCE}, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
