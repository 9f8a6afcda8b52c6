# Table and ratios from bench_allreduce RESULT lines ("RESULT <impl> <bytes> <seconds> <busbw>"):
# each implementation's best bus bandwidth per size, then for every pair in `pairs`
# ("a/b a/c ...") the ratio a/b per size and its geometric mean over sizes.
#   awk -v title="..." -v impls="a b c" -v pairs="a/b a/c" [-v link=GB/s] -f summarize.awk FILE
# With `link` (the physical limit of each rank's link, GB/s) every cell also says what share of
# the link it reached.
function human(b) {
  if (b >= 1048576) return sprintf("%d MiB", b / 1048576)
  if (b >= 1024) return sprintf("%d KiB", b / 1024)
  return b " B"
}
function ratio(a, b,   i, s, n, logsum, line, r) {
  n = 0; logsum = 0; line = ""
  for (i = 1; i <= nsizes; i++) {
    s = sizes[i]
    if (!((a, s) in bw) || !((b, s) in bw) || bw[b, s] <= 0 || bw[a, s] <= 0) continue
    r = bw[a, s] / bw[b, s]
    logsum += log(r); n++
    line = line sprintf(" %s:%.2f", human(s), r)
  }
  if (n == 0) return
  printf "ratio %s/%s: %.2f (geomean over %d sizes)\n", a, b, exp(logsum / n), n
  printf "ratio %s/%s per size:%s\n", a, b, line
}
$1 == "RESULT" {
  key = $2 SUBSEP $3
  if (!(key in bw) || $5 > bw[key]) bw[key] = $5
  if (!($3 in seen)) { seen[$3] = 1; sizes[++nsizes] = $3 + 0 }
}
END {
  for (i = 1; i <= nsizes; i++) for (j = i + 1; j <= nsizes; j++)
    if (sizes[j] < sizes[i]) { t = sizes[i]; sizes[i] = sizes[j]; sizes[j] = t }
  width = link > 0 ? 16 : 10
  n = split(impls, names, " ")
  printf "%s\n%-9s", title, "size"
  for (k = 1; k <= n; k++) printf " %*s", width, names[k]
  printf "\n"
  for (i = 1; i <= nsizes; i++) {
    printf "%-9s", human(sizes[i])
    for (k = 1; k <= n; k++) {
      if (!((names[k], sizes[i]) in bw)) { printf " %*s", width, "n/a"; continue }
      v = bw[names[k], sizes[i]]
      if (link > 0) printf " %9.3f (%3d%%)", v, 100 * v / link
      else printf " %*.3f", width, v
    }
    printf "\n"
  }
  np = split(pairs, pair, " ")
  for (k = 1; k <= np; k++) {
    split(pair[k], ab, "/")
    ratio(ab[1], ab[2])
  }
}
