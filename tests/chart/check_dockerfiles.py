#!/usr/bin/env python3
"""dockerfile_check_test: checks dockerfiles/*.Dockerfile without a Docker engine:
- every COPY/ADD source from the build context exists in the repository and is not dropped by
  .dockerignore;
- every COPY --from=<stage> names an earlier stage; a source under that stage's CMake build dir
  (<build>/bin/<name>) is an rm_app() target that the stage's RUN builds; any other source is
  made by a RUN of that stage or installed there by a Debian package (dpkg -S on this host);
- every stage that runs cmake COPYs each folder the top-level CMakeLists.txt adds
  unconditionally;
- packages apt-installed in a build stage are in scripts/setup's list (or EXTRA_PACKAGES);
- ENTRYPOINT/CMD run a binary the final stage COPYs from a build and that is an rm_app target;
- the final stage's USER is a numeric non-root uid (runAsNonRoot needs a number).

Usage: check_dockerfiles.py REPO_ROOT
"""
import fnmatch
import glob
import json
import os
import re
import shlex
import subprocess
import sys

# Runtime packages beyond scripts/setup's build list, each for a reason.
EXTRA_PACKAGES = {
    "libnccl-dev": "NCCL headers in the CUDA devel stage (NVIDIA's apt repository)",
    "libnccl2": "NCCL at run time (NVIDIA's apt repository)",
    "openssh-server": "sshd for launcher: mpi",
    "openssh-client": "ssh for mpirun",
}
EXPECTED_USER = {"operator.Dockerfile": "65532", "worker.Dockerfile": "1000"}


def logical_lines(text):
    out, cur = [], ""
    for line in text.split("\n"):
        stripped = line.strip()
        if not cur and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # comment inside a continuation
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        out.append((cur + line).strip())
        cur = ""
    if cur:
        out.append(cur.strip())
    return out


class Stage:
    def __init__(self, base, name):
        self.base, self.name = base, name
        self.copies = []  # (from_stage or None, [sources], dest)
        self.runs = []
        self.user = None
        self.entry = []


def parse(path):
    with open(path, encoding="utf-8") as f:
        lines = logical_lines(f.read())
    args, stages = {}, []
    for line in lines:
        word, _, rest = line.partition(" ")
        word = word.upper()
        rest = rest.strip()
        for k, v in args.items():
            rest = rest.replace("${" + k + "}", v).replace("$" + k, v)
        if word == "ARG":
            k, _, v = rest.partition("=")
            args[k] = v
        elif word == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None
            stages.append(Stage(parts[0], name))
        elif not stages:
            raise ValueError(f"{path}: {word} before FROM")
        elif word in ("COPY", "ADD"):
            toks = shlex.split(rest)
            frm = None
            while toks and toks[0].startswith("--"):
                flag = toks.pop(0)
                if flag.startswith("--from="):
                    frm = flag[len("--from="):]
            stages[-1].copies.append((frm, toks[:-1], toks[-1], word))
        elif word == "RUN":
            stages[-1].runs.append(rest)
        elif word == "USER":
            stages[-1].user = rest
        elif word in ("ENTRYPOINT", "CMD"):
            try:
                stages[-1].entry.append((word, json.loads(rest)))
            except ValueError:
                stages[-1].entry.append((word, None))
    return stages


def rm_apps(root):
    apps = set()
    for cm in glob.glob(os.path.join(root, "**", "CMakeLists.txt"), recursive=True):
        rel = os.path.relpath(cm, root)
        if rel.startswith("build"):
            continue
        with open(cm, encoding="utf-8") as f:
            apps.update(re.findall(r"rm_app\(\s*([\w.+-]+)\s*\)", f.read()))
    return apps


def unconditional_subdirs(root):
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    depth, out = 0, []
    for line in text.split("\n"):
        code = line.split("#", 1)[0].strip()
        if re.match(r"if\s*\(", code):
            depth += 1
        elif re.match(r"endif\s*\(", code):
            depth -= 1
        m = re.match(r"add_subdirectory\(\s*([\w/.-]+)", code)
        if m and depth == 0:
            out.append(m.group(1))
    return out


def setup_packages(root):
    res = subprocess.run([os.path.join(root, "scripts", "setup"), "--list"], capture_output=True,
                         text=True, check=True)
    return set(res.stdout.split())


def dockerignore(root):
    path = os.path.join(root, ".dockerignore")
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [l.strip().rstrip("/") for l in f if l.strip() and not l.startswith("#")]


def ignored(rel, patterns):
    rel = rel.strip("/")
    parts = rel.split("/")
    for pat in patterns:
        if pat.startswith("!"):
            continue
        for i in range(1, len(parts) + 1):
            if fnmatch.fnmatch("/".join(parts[:i]), pat):
                return pat
    return None


def apt_packages(run):
    pkgs = []
    for m in re.finditer(r"apt-get install ([^&;|]*)", run):
        pkgs += [t for t in m.group(1).split() if not t.startswith("-")]
    return pkgs


def dpkg_owner(path):
    res = subprocess.run(["dpkg", "-S", path.rstrip("/")], capture_output=True, text=True)
    return res.stdout.split(":")[0].strip() if res.returncode == 0 else None


def check(root, path, apps, subdirs, packages, ignore):
    fails = []
    name = os.path.basename(path)
    stages = parse(path)
    by_name = {}
    final = stages[-1]
    for idx, st in enumerate(stages):
        where = f"{name} stage {st.name or idx} ({st.base})"
        runs = " && ".join(st.runs)
        build_dir = None
        m = re.search(r"cmake -S \S+ -B (\S+)", runs)
        if m:
            build_dir = m.group(1).rstrip("/")
            copied = {src.rstrip("/") for frm, srcs, _, _ in st.copies if not frm for src in srcs}
            for sub in subdirs:
                if sub not in copied and sub.split("/")[0] not in copied:
                    fails.append(f"{where}: runs cmake but does not COPY {sub}/, which "
                                 "CMakeLists.txt always adds")
        built = set()
        for m in re.finditer(r"--target ((?:[\w.+-]+ ?)+)", runs):
            built.update(m.group(1).split())
        st.build_dir, st.built = build_dir, built
        for pkg in [p for run in st.runs for p in apt_packages(run)]:
            if pkg not in packages and pkg not in EXTRA_PACKAGES:
                fails.append(f"{where}: installs {pkg}, which scripts/setup does not list")
        for frm, srcs, dest, word in st.copies:
            if word == "ADD":
                fails.append(f"{where}: ADD {srcs}: use COPY")
            for src in srcs:
                if frm is None:
                    if src.startswith("/") or ".." in src:
                        fails.append(f"{where}: COPY source {src} is outside the context")
                    elif not glob.glob(os.path.join(root, src)):
                        fails.append(f"{where}: COPY source {src} does not exist in the repository")
                    elif ignored(src, ignore):
                        fails.append(f"{where}: COPY source {src} is excluded by .dockerignore "
                                     f"({ignored(src, ignore)})")
                    continue
                other = by_name.get(frm)
                if other is None:
                    fails.append(f"{where}: COPY --from={frm}: no earlier stage of that name")
                    continue
                if other.build_dir and src.startswith(other.build_dir + "/bin/"):
                    target = src[len(other.build_dir + "/bin/"):]
                    if target not in apps:
                        fails.append(f"{where}: {src}: {target} is not an rm_app() target")
                    if target not in other.built:
                        fails.append(f"{where}: {src}: stage {frm} does not build --target "
                                     f"{target}")
                elif src.rstrip("/") in " ".join(other.runs):
                    pass  # made by a RUN of that stage
                else:
                    owner = dpkg_owner(src)
                    installed = [p for run in other.runs for p in apt_packages(run)]
                    if owner not in installed:
                        fails.append(f"{where}: COPY --from={frm} {src}: no RUN of {frm} makes it "
                                     f"and no package it installs owns it (dpkg -S: {owner})")
        if st.name:
            by_name[st.name] = st
    # The final stage.
    if len(stages) < 2:
        fails.append(f"{name}: not a multi-stage build")
    user = (final.user or "").split(":")[0]
    if not user.isdigit() or user == "0":
        fails.append(f"{name}: final USER is {final.user!r}; want a numeric non-root uid")
    elif name in EXPECTED_USER and user != EXPECTED_USER[name]:
        fails.append(f"{name}: USER {user}, want {EXPECTED_USER[name]}")
    if not final.entry:
        fails.append(f"{name}: no ENTRYPOINT or CMD")
    copied_bins = {dest: os.path.basename(src) for frm, srcs, dest, _ in final.copies
                   if frm and by_name.get(frm) and by_name[frm].build_dir for src in srcs
                   if src.startswith(by_name[frm].build_dir + "/bin/")}
    for word, argv in final.entry:
        if not argv:
            fails.append(f"{name}: {word} must be exec form (a JSON array)")
            continue
        binary = argv[0]
        if binary not in copied_bins:
            fails.append(f"{name}: {word} runs {binary}, which the final stage does not COPY "
                         "from a build stage")
        elif os.path.basename(binary) not in apps:
            fails.append(f"{name}: {word} {binary} is not an rm_app() target")
    return fails, stages


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    apps, subdirs = rm_apps(root), unconditional_subdirs(root)
    packages, ignore = setup_packages(root), dockerignore(root)
    files = sorted(glob.glob(os.path.join(root, "dockerfiles", "*.Dockerfile")))
    failures = []
    if [os.path.basename(f) for f in files] != ["operator.Dockerfile", "worker.Dockerfile"]:
        failures.append(f"dockerfiles/ holds {files}, want operator and worker Dockerfiles")
    for f in files:
        found, stages = check(root, f, apps, subdirs, packages, ignore)
        print(f"{os.path.basename(f)}: {len(stages)} stages, final {stages[-1].base} user "
              f"{stages[-1].user}, {len(found)} failure(s)")
        failures += found
    for f in failures:
        print("FAIL:", f)
    print(f"dockerfile_check_test: rm_app targets {sorted(apps)}; {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
