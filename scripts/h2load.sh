#!/usr/bin/env bash
# The load tool's rows driven by an outside client: h2load (C, nghttp2), so the figures
# do not depend on our own client's costs. Starts the release server on 127.0.0.1,
# registers the load tool's commands and writes its request bodies (`--write-bodies`),
# then runs each body right after a floor run (grpc.health.v1 Check) with 16 streams
# over 4 connections, ROUNDS times, and prints the median ratio of each row's calls/s to
# its floor's. h2load does not read gRPC statuses: the load tool checks the same bodies'
# answers in its own runs.
#
#   apt-get install nghttp2-client      # h2load
#   bash scripts/h2load.sh              # H2LOAD_REQUESTS (100000), H2LOAD_ROUNDS (3)
#
# H2LOAD_SERVER names another server binary to drive (an older build, for a before
# row); H2LOAD_SERVER_FLAGS adds flags to its `serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v h2load >/dev/null || { echo "h2load is missing: apt-get install nghttp2-client" >&2; exit 1; }
requests=${H2LOAD_REQUESTS:-100000}
rounds=${H2LOAD_ROUNDS:-3}

cargo build --release --locked --bins
dir=$(mktemp -d)
server_bin=${H2LOAD_SERVER:-./target/release/a2a-commands}
"$server_bin" serve --listen 127.0.0.1:0 --health-listen off \
  --data-dir "$dir/data" --log-format json ${H2LOAD_SERVER_FLAGS:-} 2> "$dir/server.log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
. scripts/serving.sh
addr=$(serving_addr "$dir/server.log" "$server" 150)
./target/release/a2a-commands-load --addr "$addr" --commands 100 --write-bodies "$dir/bodies" >/dev/null

# calls/s of `requests` calls of one body.
rate() {
  h2load -n "$requests" -c 4 -m 4 -H 'content-type: application/grpc' -H 'te: trailers' \
    -d "$2" "http://$addr$1" | awk '/^finished in/ {gsub(",", "", $4); print $4}'
}
floor_path=$(awk -F'\t' '$1 == "floor" {print $2}' "$dir/bodies/bodies.tsv")
floor_file=$(awk -F'\t' '$1 == "floor" {print $3}' "$dir/bodies/bodies.tsv")
echo "| rpc (h2load, 16 streams over 4 connections) | calls/s | floor calls/s | ratio (median of $rounds) |"
echo "| --- | ---: | ---: | ---: |"
while IFS=$'\t' read -r name path file; do
  [ "$name" = floor ] && continue
  results=()
  for _ in $(seq 1 "$rounds"); do
    floor=$(rate "$floor_path" "$floor_file")
    this=$(rate "$path" "$file")
    results+=("$(awk -v a="$this" -v b="$floor" 'BEGIN {printf "%.3f %s %s", a / b, a, b}')")
  done
  median=$(printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (rounds + 1) / 2 ))p")
  read -r ratio this floor <<< "$median"
  printf '| %s | %.0f | %.0f | %.2f |\n' "$name" "$this" "$floor" "$ratio"
done < "$dir/bodies/bodies.tsv"
