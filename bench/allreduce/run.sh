#!/usr/bin/env bash
# Allreduce bus bandwidth with 2 ranks on this machine: ours (shm, gloo, tcp communicators) against
# raw Gloo (classic ring over TCP) and MPI_Allreduce (Open MPI: vader shared memory, and TCP).
#
#   bench/allreduce/run.sh [path/to/bench_allreduce]
#
# Environment: ROUNDS (default 3), REPEATS (timed batches per size, default 5), MIN_BYTES,
# MAX_BYTES, FACTOR (sizes, default 4 KiB..256 MiB x4), BASE_PORT (default 29700), ONLY (space-
# separated subset of: ours-shm ours-gloo ours-tcp gloo-raw mpi-shm mpi-tcp).
#
# Each implementation runs its 2 ranks side by side, one per core: ours and gloo-raw as two
# processes started here (RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT), MPI under mpirun
# (bound to cores, its default). Every process reports the median of REPEATS batches per size
# (bench_allreduce). Implementations take turns, ROUNDS times; a small shared VM is noisy
# (neighbours steal memory bandwidth for seconds at a time), so the table keeps each
# implementation's best round: every peer gets the same chance at a quiet machine.
# Bus bandwidth (GB/s) follows nccl-tests: bytes / time * 2 * (n - 1) / n.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-${BENCH_BIN:-$here/../../build/bench/allreduce/bench_allreduce}}
rounds=${ROUNDS:-3}
repeats=${REPEATS:-5}
min_bytes=${MIN_BYTES:-4096}
max_bytes=${MAX_BYTES:-268435456}
factor=${FACTOR:-4}
port=${BASE_PORT:-29700}
impls=${ONLY:-"ours-shm ours-gloo ours-tcp gloo-raw mpi-shm mpi-tcp"}

if [[ ! -x $bin ]]; then
  echo "run.sh: no bench_allreduce at $bin (build target bench_allreduce, or pass its path)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results
: >"$results"
common=(--min-bytes "$min_bytes" --max-bytes "$max_bytes" --factor "$factor"
        --repeats "$repeats")

pin() {  # pin <core> cmd...: one rank per core when there are two
  if command -v taskset >/dev/null && (($(nproc) >= 2)); then taskset -c "$1" "${@:2}"; else "${@:2}"; fi
}

# Two processes of ours / gloo-raw; rank 0's RESULT lines go to the results file.
run_pair() {
  local impl=$1
  port=$((port + 1))
  local store=$work/store-$port
  mkdir -p "$store"
  local env=(env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
             RINGMASTER_LOG_LEVEL=warn)
  pin 0 timeout 300 "${env[@]}" "$bin" --impl "$impl" --store-dir "$store" "${common[@]}" \
    >"$work/out0" 2>"$work/err0" &
  local pid0=$!
  local rc1=0 rc0=0
  pin 1 timeout 300 "${env[@]/RANK=0/RANK=1}" "$bin" --impl "$impl" --store-dir "$store" \
    "${common[@]}" >/dev/null 2>"$work/err1" || rc1=$?
  wait "$pid0" || rc0=$?
  if ((rc0 != 0 || rc1 != 0)); then
    echo "  $impl failed (exit $rc0 / $rc1): $(cat "$work/err0" "$work/err1" | tail -3)" >&2
    return 0
  fi
  grep '^RESULT' "$work/out0" >>"$results" || true
}

run_mpi() {
  local label=$1 btl=$2
  if ! command -v mpirun >/dev/null; then
    echo "  $label skipped: no mpirun" >&2
    return 0
  fi
  local rc=0
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core \
    --mca pml ob1 --mca btl "$btl" "$bin" --impl mpi --label "$label" "${common[@]}" \
    >"$work/out0" 2>"$work/err0" || rc=$?
  if ((rc != 0)); then
    echo "  $label failed (exit $rc): $(tail -3 "$work/err0")" >&2
    return 0
  fi
  grep '^RESULT' "$work/out0" >>"$results" || true
}

start=$(date +%s)
for ((round = 1; round <= rounds; round++)); do
  for impl in $impls; do
    echo "round $round/$rounds: $impl" >&2
    case $impl in
      ours-shm | ours-gloo | ours-tcp | gloo-raw) run_pair "$impl" ;;
      mpi-shm) run_mpi mpi-shm self,vader ;;
      mpi-tcp) run_mpi mpi-tcp tcp,self ;;
      *) echo "run.sh: unknown implementation $impl" >&2; exit 2 ;;
    esac
  done
done
echo "($(($(date +%s) - start)) s, $rounds rounds, median of $repeats batches per size)" >&2

# Table (best round per implementation and size) and ratios (geometric mean over sizes).
awk -v title="bus bandwidth, GB/s (2 ranks)" -v impls="$impls" \
  -v pairs="ours-shm/mpi-shm ours-shm/mpi-tcp ours-shm/gloo-raw ours-gloo/gloo-raw ours-gloo/mpi-tcp ours-tcp/mpi-tcp ours-tcp/gloo-raw" \
  -f "$here/summarize.awk" "$results"
