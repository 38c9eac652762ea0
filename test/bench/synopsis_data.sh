#!/usr/bin/env bash
# Real data sets for the synopsis accuracy tests, as CSV (no header) on stdout:
#   diamonds   carat, depth, table, price            53,940 rows (R package ggplot2, r-cran-ggplot2)
#   movielens  year, rating, timestamp, userId      100,004 rows (R package dslabs, r-cran-dslabs)
# Read with Rscript from the installed Debian packages (test/lib.sh installs
# them). A copy under build/synopsis_data/ or .device/data/ is used when
# present (the GPU machine has no R: test/gpu/prepare.sh runs
#   test/bench/synopsis_data.sh --export .device/data
# here). Prints nothing when there is no data, so a caller can skip; exits 0.
set -u
name=${1:-}
cd "$(dirname "$0")/../.."
if [ "$name" = --export ]; then
  mkdir -p "$2"
  for n in diamonds movielens; do "$0" "$n" >"$2/$n.csv"; [ -s "$2/$n.csv" ] || rm -f "$2/$n.csv"; done
  exit 0
fi
for cache in "build/synopsis_data/$name.csv" ".device/data/$name.csv"; do
  if [ -s "$cache" ]; then cat "$cache"; exit 0; fi
done
cache=build/synopsis_data/$name.csv
command -v Rscript >/dev/null 2>&1 || exit 0
case "$name" in
  diamonds) expr='d <- ggplot2::diamonds; d <- data.frame(d$carat, d$depth, d$table, d$price)' ;;
  movielens) expr='data(movielens, package = "dslabs"); d <- movielens; d <- d[!is.na(d$year), c("year", "rating", "timestamp", "userId")]' ;;
  *) echo "usage: $0 diamonds|movielens" >&2; exit 0 ;;
esac
mkdir -p build/synopsis_data 2>/dev/null
tmp=$(mktemp)
if Rscript -e "$expr; write.table(d, stdout(), sep = ',', row.names = FALSE, col.names = FALSE)" >"$tmp" 2>/dev/null; then
  cp "$tmp" "$cache" 2>/dev/null && chmod 644 "$cache"
  cat "$tmp"
fi
rm -f "$tmp"
exit 0
