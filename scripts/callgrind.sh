#!/usr/bin/env bash
# Instructions the server executes per call, counted by valgrind's callgrind while h2load
# drives it: the same bodies as scripts/h2load.sh, but a count that does not drift with
# the machine. Counts every thread of the server (the call log's writer included), not
# the kernel, so it says what our process costs, not how fast the machine serves it.
#
#   apt-get install valgrind nghttp2-client
#   bash scripts/callgrind.sh [row ...]       # default: every row; CALLGRIND_CALLS (5000)
#
# CALLGRIND_SERVER_FLAGS adds flags to the server's `serve` (e.g. a metrics listener).
# CALLGRIND_KEEP=DIR keeps each row's dump as DIR/<row>.out, for
# `callgrind_annotate --inclusive=yes DIR/<row>.out` (where a row's instructions go).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in h2load valgrind callgrind_annotate callgrind_control; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: apt-get install valgrind nghttp2-client" >&2; exit 1; }
done
calls=${CALLGRIND_CALLS:-5000}

cargo build --release --locked --bins
dir=$(mktemp -d)
valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$dir/cg.out" \
  ./target/release/a2a-commands serve --listen 127.0.0.1:0 --health-listen off \
  --data-dir "$dir/data" --log-format json ${CALLGRIND_SERVER_FLAGS:-} 2> "$dir/server.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
. scripts/serving.sh
addr=$(serving_addr "$dir/server.log" "$server" 600) # valgrind starts slowly
./target/release/a2a-commands-load --addr "$addr" --commands 100 --write-bodies "$dir/bodies" >/dev/null

body() { awk -F'\t' -v r="$1" -v c="$2" '$1 == r {print $c}' "$dir/bodies/bodies.tsv"; }
run() {
  h2load -n "$calls" -c 4 -m 4 -H 'content-type: application/grpc' -H 'te: trailers' \
    -d "$(body "$1" 3)" "http://$addr$(body "$1" 2)" | grep -q "$calls succeeded"
}
. scripts/callgrind-per-call.sh

run floor  # warm-up: connections, caches, the card
floor=$(per_call floor)
rows=("$@")
[ ${#rows[@]} -gt 0 ] || mapfile -t rows < <(awk -F'\t' '$1 != "floor" {print $1}' "$dir/bodies/bodies.tsv")
echo "| rpc ($calls calls, h2load) | instructions per call | floor ÷ rpc |"
echo "| --- | ---: | ---: |"
printf '| floor | %.0f | 1.00 |\n' "$floor"
for row in "${rows[@]}"; do
  this=$(per_call "$row")
  printf '| %s | %.0f | %.2f |\n' "$row" "$this" "$(awk -v a="$floor" -v b="$this" 'BEGIN {print a / b}')"
done
