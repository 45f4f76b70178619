#!/usr/bin/env bash
# The callgrind rows (scripts/callgrind.sh) in sled mode and in fleet mode, back to back
# on one build: fleet mode against a one-member etcd on loopback, started here on a free
# port and stopped at the end. Reads answer from the in-memory snapshot in both modes,
# so the rows should match.
#
#   apt-get install valgrind nghttp2-client etcd-server
#   bash scripts/callgrind-fleet.sh [row ...]     # CALLGRIND_CALLS as callgrind.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v etcd >/dev/null || { echo "etcd is missing: apt-get install etcd-server" >&2; exit 1; }
dir=$(mktemp -d)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
client=$(port); peer=$(port)
etcd --name m0 --data-dir "$dir/m0" --listen-client-urls "http://127.0.0.1:$client" \
  --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$peer" \
  --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "m0=http://127.0.0.1:$peer" \
  >"$dir/etcd.log" 2>&1 &
etcd_pid=$!
trap 'kill $etcd_pid 2>/dev/null; wait $etcd_pid 2>/dev/null || true; rm -rf "$dir"' EXIT
echo "### sled mode"
bash scripts/callgrind.sh "$@"
echo "### fleet mode (etcd at 127.0.0.1:$client)"
CALLGRIND_SERVER_FLAGS="${CALLGRIND_SERVER_FLAGS:-} --fleet-etcd-endpoints http://127.0.0.1:$client" \
  bash scripts/callgrind.sh "$@"
