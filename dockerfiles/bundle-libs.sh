#!/bin/sh
# Copies the shared libraries that BINARY... load (as ldd resolves them in the build stage) into
# DEST, except those whose file name matches EXCLUDE (an extended regex: what the runtime base
# image or its packages already provide, e.g. glibc or CUDA). The runtime stage then holds the
# binaries and exactly their libraries. Fails when a library is not found.
# Usage: bundle-libs.sh DEST EXCLUDE BINARY...
set -eu
[ $# -ge 3 ] || { echo "usage: bundle-libs.sh DEST EXCLUDE BINARY..." >&2; exit 2; }
dest=$1
exclude=$2
shift 2
mkdir -p "$dest"
for bin in "$@"; do
  if ldd "$bin" | grep -q 'not found'; then
    echo "bundle-libs: $bin: missing libraries:" >&2
    ldd "$bin" | grep 'not found' >&2
    exit 1
  fi
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r lib; do
  name=$(basename "$lib")
  if printf '%s\n' "$name" | grep -Eq "$exclude"; then continue; fi
  cp -L "$lib" "$dest/$name"
  echo "bundle-libs: $name"
done
