#!/usr/bin/env python3
"""dockerfile_check_test: checks dockerfiles/*.Dockerfile without a Docker engine:
- every COPY/ADD source from the build context exists in the repository and is not dropped by
  .dockerignore;
- every COPY --from=<stage> names an earlier stage; a source under that stage's CMake build dir
  (<build>/bin/<name>) is an rm_app() target that the stage's RUN builds; any other source is
  made by a RUN of that stage or installed there by a Debian package (dpkg -S on this host);
- every stage that runs cmake COPYs each folder the top-level CMakeLists.txt adds
  unconditionally;
- every stage is Debian bookworm, the distribution scripts/setup's package list is written for;
  packages apt-installed in a build stage are in that list (or EXTRA_BUILD_PACKAGES);
- the final stage takes every shared library from packages: each library that a binary it copies
  from a build stage loads (readelf's NEEDED, resolved by ldd in $RM_BINARY_DIR, the tree under
  test, and owned by a package per dpkg -S) is in a package it installs, or in the base image's
  C/C++ runtime; it installs nothing else without a reason (EXTRA_RUNTIME_PACKAGES); it copies no
  shared library from a build stage but the project's own GPU module;
- a CUDA build names CMAKE_CUDA_ARCHITECTURES with real code for sm_80, 86, 89 and 90 and PTX
  for newer GPUs; no stage's base or package is cuDNN (nothing uses it);
- the final stage EXPOSEs exactly the ports its binaries use by default (lib/contract's and the
  operator's flag defaults);
- ENTRYPOINT/CMD run a binary the final stage COPYs from a build and that is an rm_app target;
- the final stage's USER is a numeric non-root uid (runAsNonRoot needs a number);
- the CPU worker (worker-cpu.Dockerfile) names no CUDA, NCCL, cuBLAS or NVIDIA package or file.
Not checked: base images pinned by digest (no registry can be reached here to read one).

Usage: RM_BINARY_DIR=<build tree> check_dockerfiles.py REPO_ROOT
"""
import fnmatch
import glob
import json
import os
import re
import shlex
import subprocess
import sys

# Build-stage packages beyond scripts/setup's list, each for a reason ({v}: the CUDA version in
# NVIDIA's package names, the Dockerfile's CUDA_PACKAGES_VERSION).
EXTRA_BUILD_PACKAGES = {
    "libnccl-dev": "NCCL headers and library (NVIDIA's apt repository)",
    "cuda-nvcc-{v}": "CUDA's compiler (NVIDIA's apt repository)",
    "cuda-cudart-dev-{v}": "CUDA runtime headers (NVIDIA's apt repository)",
    "libcublas-dev-{v}": "cuBLAS headers (NVIDIA's apt repository)",
}
# Runtime packages that no binary's NEEDED names, each for a reason.
EXTRA_RUNTIME_PACKAGES = {
    "openmpi-bin": "mpirun for launcher: mpi",
    "openssh-server": "sshd for launcher: mpi",
    "openssh-client": "ssh for mpirun",
    "ca-certificates": "TLS to the API server and NVIDIA's repository",
}
# The GPU module's CUDA libraries (by soname without its version) and NVIDIA's packages that
# hold them.
CUDA_PACKAGES = {
    "libcudart.so": "cuda-cudart-{v}",
    "libcublas.so": "libcublas-{v}",
    "libcublasLt.so": "libcublas-{v}",
    "libnccl.so": "libnccl2",
}
# In every Debian image: glibc, libgcc and libstdc++ (apt itself needs them).
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6"}
EXPECTED_USER = {"operator.Dockerfile": "65532", "worker.Dockerfile": "1000",
                 "worker-cpu.Dockerfile": "1000"}
# The Dockerfiles dockerfiles/ holds: the operator, the GPU worker and the CPU worker.
DOCKERFILES = ["operator.Dockerfile", "worker-cpu.Dockerfile", "worker.Dockerfile"]


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
        self.expose = []


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
            k, eq, v = rest.partition("=")
            if eq or k not in args:  # a bare ARG in a stage brings the global value in
                args[k] = v.strip('"')
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
        elif word == "EXPOSE":
            stages[-1].expose += [int(t.split("/")[0]) for t in rest.split()]
        elif word in ("ENTRYPOINT", "CMD"):
            try:
                stages[-1].entry.append((word, json.loads(rest)))
            except ValueError:
                stages[-1].entry.append((word, None))
    return stages, args


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


def package_of_library(path):
    """The Debian package owning a library file: dpkg knows either its merged-/usr path or the
    /lib one, and an alternatives link only by its target."""
    real = os.path.realpath(path)
    candidates = [path, real]
    for p in (path, real):
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib/"):
            candidates.append("/usr" + p)
    for c in candidates:
        owner = dpkg_owner(c)
        if owner:
            return owner
    return None


def needed_libraries(binary):
    """[(soname, resolved path or None)] for the binary's direct NEEDED entries."""
    dyn = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True, check=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn.stdout)
    ldd = subprocess.run(["ldd", binary], capture_output=True, text=True)
    resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd.stdout, re.M))
    return [(n, resolved.get(n)) for n in needed]


def source_constant(root, rel, pattern):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        m = re.search(pattern, f.read())
    if not m:
        raise ValueError(f"{rel}: no match for {pattern}")
    return int(m.group(1))


def expected_ports(root, name):
    """The ports the final stage's binaries listen on by default, read from the sources."""
    if name in ("worker.Dockerfile", "worker-cpu.Dockerfile"):
        env = "lib/contract/include/ringmaster/contract/pod_environment.h"
        spec = "lib/contract/include/ringmaster/contract/trainer_spec.h"
        return {source_constant(root, env, r"kSshPort = (\d+)"),
                source_constant(root, env, r"kHealthPort = (\d+)"),
                source_constant(root, env, r"kRendezvousPort = (\d+)"),
                source_constant(root, env, r"kMasterPortDefault = (\d+)"),
                source_constant(root, spec, r"kDefaultMetricsPort = (\d+)")}
    if name == "operator.Dockerfile":
        main = "operator/main.cc"
        return {source_constant(root, main, r"metrics_port = (\d+);"),
                source_constant(root, main, r"health_port = (\d+);")}
    return None


def cuda_architectures(runs):
    m = re.search(r"-DCMAKE_CUDA_ARCHITECTURES=([\w;-]+)", runs)
    return m.group(1).split(";") if m else None


def check_runtime(root, name, stages, version, binary_dir):
    """The final stage's libraries come from packages it installs (see the module docstring);
    `version` is the CUDA version in NVIDIA's package names."""
    fails = []
    final = stages[-1]
    by_name = {st.name: st for st in stages if st.name}
    installed = [p for run in final.runs for p in apt_packages(run)]
    needed = {}  # package -> why
    for frm, srcs, _, _ in final.copies:
        other = by_name.get(frm)
        if not other or not other.build_dir:
            continue
        for src in srcs:
            if not src.startswith(other.build_dir + "/"):
                continue
            rel = src[len(other.build_dir) + 1:]
            if rel.endswith(".so") or "/lib/" in "/" + rel:
                if not os.path.basename(rel).startswith("libringmaster-"):
                    fails.append(f"{name}: COPY --from={frm} {src}: a library copied from a "
                                 "build stage; install its package instead")
            local = os.path.join(binary_dir, rel)
            if not os.path.exists(local):
                if rel.endswith(".so"):
                    # The GPU module is built only where nvcc is (the sanitized tree has none):
                    # its CUDA packages are still required, its NEEDED entries not read.
                    print(f"{name}: {rel} is not built in {binary_dir}: its NEEDED entries are "
                          "not read here; the CUDA packages it loads are required all the same")
                    for pkg in CUDA_PACKAGES.values():
                        needed.setdefault(pkg.format(v=version), f"{rel} (not built here)")
                    continue
                fails.append(f"{name}: {rel} is not built in {binary_dir} (RM_BINARY_DIR): "
                             "cannot read the libraries it loads")
                continue
            for soname, path in needed_libraries(local):
                stem = re.sub(r"\.so(\.\d+)*$", ".so", soname)
                if stem in CUDA_PACKAGES:
                    needed.setdefault(CUDA_PACKAGES[stem].format(v=version), f"{rel}: {soname}")
                    continue
                owner = package_of_library(path) if path else None
                if owner is None:
                    fails.append(f"{name}: {rel} loads {soname} ({path}), which no Debian "
                                 "package on this host holds")
                elif owner not in BASE_PACKAGES:
                    needed.setdefault(owner, f"{rel}: {soname}")
    for pkg, why in sorted(needed.items()):
        if pkg not in installed:
            fails.append(f"{name}: the final stage does not install {pkg} ({why})")
    for pkg in installed:
        if pkg not in needed and pkg not in EXTRA_RUNTIME_PACKAGES:
            fails.append(f"{name}: the final stage installs {pkg}, which none of its binaries "
                         "loads and EXTRA_RUNTIME_PACKAGES gives no reason for")
    want = expected_ports(root, name)
    if want is not None and set(final.expose) != want:
        fails.append(f"{name}: EXPOSE {sorted(final.expose)}, but its binaries use "
                     f"{sorted(want)} by default")
    return fails


def check(root, path, apps, subdirs, packages, ignore, binary_dir):
    fails = []
    name = os.path.basename(path)
    stages, args = parse(path)
    version = args.get("CUDA_PACKAGES_VERSION", "")
    if name == "worker-cpu.Dockerfile":
        # The CPU worker is a first-class image, not the GPU one minus a driver: no CUDA at all.
        text = open(path, encoding="utf-8").read()
        for word in ("cuda", "nccl", "cublas", "nvidia"):
            for line in logical_lines(text):
                if word in line.lower().replace("-drm_with_cuda=off", ""):
                    fails.append(f"{name}: names {word} ({line[:80]}...): the CPU image holds "
                                 "no CUDA library")
    build_extras = {k.format(v=version) for k in EXTRA_BUILD_PACKAGES}
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
        if not re.match(r"debian:bookworm(-\d{8})?(-slim)?(@sha256:[0-9a-f]{64})?$", st.base):
            fails.append(f"{where}: not Debian bookworm, the distribution scripts/setup's "
                         "package list is written for")
        if "cudnn" in st.base.lower() or "cudnn" in runs.lower():
            fails.append(f"{where}: cuDNN, which nothing uses")
        if st is not final:
            for pkg in [p for run in st.runs for p in apt_packages(run)]:
                if pkg not in packages and pkg not in build_extras:
                    fails.append(f"{where}: installs {pkg}, which scripts/setup does not list")
        if "-DRM_WITH_CUDA=ON" in runs:
            archs = cuda_architectures(runs)
            if archs is None:
                fails.append(f"{where}: a CUDA build without CMAKE_CUDA_ARCHITECTURES")
            else:
                real = {a.split("-")[0] for a in archs if not a.endswith("-virtual")}
                missing = {"80", "86", "89", "90"} - real
                if missing:
                    fails.append(f"{where}: CMAKE_CUDA_ARCHITECTURES {';'.join(archs)} has no "
                                 f"code for sm_{', sm_'.join(sorted(missing))}")
                if all(a.endswith("-real") for a in archs):
                    fails.append(f"{where}: CMAKE_CUDA_ARCHITECTURES {';'.join(archs)} has no "
                                 "PTX (an entry without -real) for GPUs newer than its list")
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
    fails += check_runtime(root, name, stages, version, binary_dir)
    return fails, stages


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    binary_dir = os.environ.get("RM_BINARY_DIR")
    if not binary_dir:
        sys.exit("check_dockerfiles.py: RM_BINARY_DIR (the build tree whose binaries the images "
                 "ship) is not set")
    apps, subdirs = rm_apps(root), unconditional_subdirs(root)
    packages, ignore = setup_packages(root), dockerignore(root)
    files = sorted(glob.glob(os.path.join(root, "dockerfiles", "*.Dockerfile")))
    failures = []
    if [os.path.basename(f) for f in files] != DOCKERFILES:
        failures.append(f"dockerfiles/ holds {files}, want {DOCKERFILES}")
    for f in files:
        found, stages = check(root, f, apps, subdirs, packages, ignore, binary_dir)
        print(f"{os.path.basename(f)}: {len(stages)} stages, final {stages[-1].base} user "
              f"{stages[-1].user}, {len(found)} failure(s)")
        failures += found
    for f in failures:
        print("FAIL:", f)
    print(f"dockerfile_check_test: rm_app targets {sorted(apps)}; {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
