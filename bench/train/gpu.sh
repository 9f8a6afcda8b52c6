#!/usr/bin/env bash
# bench/train/gpu.sh: ringmaster-trainer's CUDA path vs PyTorch (eager and torch.compile) on the
# same GPU, side by side in one run. Same MLPs, batches, schedule (SGD lr 0.05 momentum 0.9) and
# data (Fashion-MNIST, held in GPU memory by both sides), in fp32 (TF32 off on both sides) and
# bf16 (fp32 master weights). Configurations:
#   small   784-512-512-10              batch  128
#   medium  784-2048-2048-10            batch 1024
#   large   784-8192-8192-8192-10       batch 4096
# 5 epochs each (--quick: 2). For each configuration and precision, every side runs --repeats
# times; the table shows the median steady samples/s (without epoch 1: compilation, graph
# capture, warm-up), the ratios ours/eager and ours/compile, our TFLOP/s and its fraction of the
# GPU's dense peak, and the test accuracies.
#   bench/train/gpu.sh [--repeats N] [--quick] [--data DIR] [--only small,medium,large]
# Environment:
#   RM_TRAINER   our binary, built with CUDA (default build/bin/ringmaster-trainer)
#   RM_PYTHON    a python3 whose torch has CUDA (default python3)
#   RM_PEAK_BF16_TFLOPS, RM_PEAK_FP32_TFLOPS   dense peaks (default H100 SXM, also right for
#                H200: 989 bf16 tensor-core, 67 fp32 without tensor cores since TF32 is off)
#   OUT_JSON     also write the table there, one JSON object a line (the file is replaced)
# Exits 1 without a GPU; a failed run is reported (configuration, precision, side) and the
# others go on; the exit status is then 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
me=bench/train/gpu.sh
repeats=3 epochs=5 data=/usr/share/datasets/fashion-mnist only=all
usage() { echo "usage: $me [--repeats N] [--quick] [--data DIR] [--only small,medium,large]" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --repeats) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; repeats=$2; shift 2 ;;
    --quick) epochs=2; shift ;;
    --data) [[ -n ${2:-} ]] || usage; data=$2; shift 2 ;;
    --only) [[ -n ${2:-} ]] || usage; only=$2; shift 2 ;;
    *) usage ;;
  esac
done
trainer=${RM_TRAINER:-$root/build/bin/ringmaster-trainer}
python=${RM_PYTHON:-python3}
die() { echo "$me: $*" >&2; exit 1; }

# --- preconditions: a GPU first (the common reason this cannot run), then the two sides ---
torch_cuda() { "$python" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; }
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>/dev/null | grep -q '^GPU' ||
    die "no GPU here (nvidia-smi -L lists none); run it on a machine with one (see scripts/gpu-check)"
else
  torch_cuda ||
    die "no GPU here (no nvidia-smi, and $python's torch sees no CUDA device); run it on a machine with one (see scripts/gpu-check)"
fi
[[ -x $trainer ]] || die "$trainer not built (a CUDA build; or set RM_TRAINER)"
torch_cuda || die "$python has no torch with CUDA (set RM_PYTHON to one that has)"
[[ -d $data ]] || die "no data directory $data (--data DIR)"

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 || true)
[[ -n $gpu ]] || gpu=$("$python" -c 'import torch; print(torch.cuda.get_device_name())')
peak_bf16=${RM_PEAK_BF16_TFLOPS:-989} peak_fp32=${RM_PEAK_FP32_TFLOPS:-67}
case $gpu in
  *H100*PCIe* | *H100*NVL*) peaks_note="peaks are H100 SXM's; this one is slower: set RM_PEAK_*" ;;
  *H100* | *H200*) peaks_note="H100 SXM peaks" ;;
  *) peaks_note="peaks are H100 SXM's; set RM_PEAK_* for this GPU" ;;
esac
[[ -z ${RM_PEAK_BF16_TFLOPS:-}${RM_PEAK_FP32_TFLOPS:-} ]] || peaks_note="peaks from RM_PEAK_*"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[[ -z ${OUT_JSON:-} ]] || : >"$OUT_JSON"

# --- helpers ---
field() {  # FILE KEY: one field of a JSON file, empty when absent or null
  "$python" -c 'import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2])
print("" if v is None else v)' "$1" "$2"
}
median() {  # NUMBERS...: their median, empty for none
  [[ $# -gt 0 ]] || return 0
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
widths() { echo "784-${1//,/-}-10"; }  # HIDDEN (512,512) -> 784-512-512-10
flops_per_sample() {  # HIDDEN: forward 2S, weight gradients 2S, input gradients 2S less the
  # first layer's (the data needs none); S = sum of d_i * d_{i+1} over the layers
  local -a d
  IFS=- read -r -a d <<<"$(widths "$1")"
  local s=0 i
  for ((i = 0; i + 1 < ${#d[@]}; i++)); do s=$((s + d[i] * d[i + 1])); done
  echo $((6 * s - 2 * d[0] * d[1]))
}
run_one() {  # SIDE PRECISION HIDDEN BATCH OUT: one training run, its summary JSON into OUT
  local side=$1 out=$5
  local args=(--precision "$2" --hidden "$3" --batch-size "$4" --epochs "$epochs" --lr 0.05
    --momentum 0.9 --data "$data")
  if [[ $side == ours ]]; then
    env -u WORLD_SIZE -u RANK RINGMASTER_LOG_LEVEL=warn "$trainer" --device cuda --model mlp \
      "${args[@]}" --summary-json "$out" >"$out.log" 2>&1
  else
    "$python" "$root/bench/train/torch_gpu.py" --device cuda --mode "$side" "${args[@]}" \
      >"$out.stdout" 2>"$out.log" && tail -n 1 "$out.stdout" >"$out"
  fi
}
throughput() {  # FILE: steady samples/s, else samples/s
  local v
  v=$(field "$1" steadySamplesPerSecond)
  [[ -n $v ]] || v=$(field "$1" samplesPerSecond)
  echo "$v"
}
report() {  # CONFIG PRECISION MODEL FLOPS PEAK then ours/eager/compile samples/s and accuracy
  # (empty where every run of that side failed): a table row, and a JSON line to $OUT_JSON
  awk -v config="$1" -v prec="$2" -v model="$3" -v flops="$4" -v peak="$5" \
    -v o="$6" -v e="$7" -v c="$8" -v ao="$9" -v ae="${10}" -v ac="${11}" \
    -v gpu="$gpu" -v epochs="$epochs" -v repeats="$repeats" -v json="${OUT_JSON:-}" '
    function num(v, fmt) { return v == "" ? "-" : sprintf(fmt, v) }
    function js(v) { return v == "" ? "null" : v }
    function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "" : a / b }
    BEGIN {
      tflops = (o == "") ? "" : o * flops / 1e12
      frac = (tflops == "") ? "" : tflops / peak
      printf "%-7s %-5s %11s %11s %11s %8s %8s %8s %6s  %s %s %s\n", config, prec,
        num(o, "%.0f"), num(e, "%.0f"), num(c, "%.0f"), num(ratio(o, e), "%.2f"),
        num(ratio(o, c), "%.2f"), num(tflops, "%.1f"), num(frac == "" ? "" : 100 * frac, "%.1f%%"),
        num(ao, "%.4f"), num(ae, "%.4f"), num(ac, "%.4f")
      if (json != "")
        printf "{\"config\": \"%s\", \"model\": \"mlp:%s\", \"precision\": \"%s\", " \
          "\"epochs\": %d, \"repeats\": %d, \"gpu\": \"%s\", " \
          "\"oursSamplesPerSecond\": %s, \"eagerSamplesPerSecond\": %s, " \
          "\"compileSamplesPerSecond\": %s, \"oursOverEager\": %s, \"oursOverCompile\": %s, " \
          "\"flopsPerSample\": %.0f, \"oursTflops\": %s, \"peakTflops\": %s, \"peakFraction\": %s, " \
          "\"oursAccuracy\": %s, \"eagerAccuracy\": %s, \"compileAccuracy\": %s}\n",
          config, model, prec, epochs, repeats, gpu, js(o), js(e), js(c), js(ratio(o, e)),
          js(ratio(o, c)), flops, js(tflops), peak, js(frac), js(ao), js(ae), js(ac) >> json
    }'
}

# --- the runs ---
configs=(  # name hidden batch
  "small 512,512 128"
  "medium 2048,2048 1024"
  "large 8192,8192,8192 4096"
)
failed=0
echo "$me: $gpu; $epochs epochs, median of $repeats; peaks bf16 $peak_bf16, fp32 $peak_fp32 TFLOP/s ($peaks_note)"
printf '%-7s %-5s %11s %11s %11s %8s %8s %8s %6s  %s\n' config prec ours/s eager/s compile/s \
  ours/eag ours/cmp TFLOP/s peak 'accuracy ours eager compile'
for cfg in "${configs[@]}"; do
  read -r name hidden batch <<<"$cfg"
  [[ $only == all || ,$only, == *",$name,"* ]] || continue
  flops=$(flops_per_sample "$hidden")
  for precision in fp32 bf16; do
    declare -A sps=() acc=()
    for side in ours eager compile; do
      values=() accs=()
      for ((i = 1; i <= repeats; i++)); do
        out="$tmp/$name-$precision-$side-$i.json"
        if run_one "$side" "$precision" "$hidden" "$batch" "$out" && [[ -s $out ]] &&
          v=$(throughput "$out") && [[ -n $v ]]; then
          values+=("$v")
          accs+=("$(field "$out" testAccuracy)")
          echo "  $name $precision $side run $i: $v samples/s, accuracy ${accs[-1]}" >&2
        else
          failed=1
          echo "$me: FAILED: $name ($(widths "$hidden"), batch $batch) $precision $side," \
            "run $i of $repeats; its log ends:" >&2
          tail -n 8 "$out.log" 2>/dev/null | sed 's/^/  | /' >&2 || true
        fi
      done
      sps[$side]=$(median "${values[@]}")
      acc[$side]=$(median "${accs[@]}")
    done
    peak=$peak_fp32
    [[ $precision == fp32 ]] || peak=$peak_bf16
    report "$name" "$precision" "$(widths "$hidden")" "$flops" "$peak" \
      "${sps[ours]}" "${sps[eager]}" "${sps[compile]}" "${acc[ours]}" "${acc[eager]}" "${acc[compile]}"
    unset sps acc
  done
done
echo "goal: ours/eager >= 1.3 and ours/compile >= 1.0 on every line"
[[ $failed -eq 0 ]] || die "some runs failed (see FAILED above)"
