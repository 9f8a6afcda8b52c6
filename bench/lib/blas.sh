# Sourced by the benchmarks that compare our CPU training with PyTorch's: both sides on the same
# OpenBLAS kernels. Our programs choose the kernels by the CPU's flags where OpenBLAS cannot tell
# the CPU's model (trainer/model/blas_kernels.h), and Debian's PyTorch does its matrix products
# in the same OpenBLAS, so without this the peer would run older kernels than ours.

# same_blas_kernels PROGRAM: exports OPENBLAS_CORETYPE, unless it is set already, as PROGRAM
# (ringmaster-trainer or bench_pipeline) reports it with --print-blas-kernels, and says which.
same_blas_kernels() {
  if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
    OPENBLAS_CORETYPE=$("$1" --print-blas-kernels) ||
      { echo "$1 --print-blas-kernels failed" >&2; return 1; }
    export OPENBLAS_CORETYPE
  fi
  echo "OpenBLAS kernels, ours and the peer's: $OPENBLAS_CORETYPE"
}
