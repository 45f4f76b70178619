#!/usr/bin/env bash
# Fleet mode's figures for BENCHMARKS.md: a three-member etcd cluster and three sidecars
# in fleet mode on loopback, and one sidecar in sled mode beside them, all started here
# on free ports and stopped at the end (failure included):
#   - propagation: Register through sidecar A until WatchSpecs on B and C shows it;
#   - the Register rate with one and three writers, fleet beside sled, in the same run.
#
#   apt-get install etcd-server etcd-client
#   bash scripts/bench-fleet.sh            # BENCH_FLEET_REGISTRATIONS (1000)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v etcd >/dev/null || { echo "etcd is missing: apt-get install etcd-server" >&2; exit 1; }
cargo build --release --locked --bins
dir=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -a client peer
for i in 0 1 2; do client[$i]=$(free_port); peer[$i]=$(free_port); done
cluster="m0=http://127.0.0.1:${peer[0]},m1=http://127.0.0.1:${peer[1]},m2=http://127.0.0.1:${peer[2]}"
for i in 0 1 2; do
  etcd --name "m$i" --data-dir "$dir/m$i" \
    --listen-client-urls "http://127.0.0.1:${client[$i]}" --advertise-client-urls "http://127.0.0.1:${client[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${peer[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${peer[$i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new >"$dir/m$i.log" 2>&1 &
  pids+=($!)
done
endpoints="http://127.0.0.1:${client[0]},http://127.0.0.1:${client[1]},http://127.0.0.1:${client[2]}"
for _ in $(seq 1 200); do
  ETCDCTL_API=3 etcdctl --endpoints "$endpoints" endpoint health >/dev/null 2>&1 && break
  sleep 0.1
done

. scripts/serving.sh
start() { # name, extra flags...: starts it here (so the trap stops it)
  local name=$1; shift
  ./target/release/a2a-commands serve --listen 127.0.0.1:0 --health-listen off --log-format json \
    --call-log-sample 1000000 --data-dir "$dir/$name" "$@" 2> "$dir/$name.log" &
  pids+=($!)
}
addrs=()
for s in a b c; do
  start "$s" --fleet-etcd-endpoints "$endpoints" --fleet-member-name "$s"
  addrs+=("$(serving_addr "$dir/$s.log" "${pids[-1]}" 60)")
done
start sled
sled=$(serving_addr "$dir/sled.log" "${pids[-1]}" 60)
# Every sidecar has read the fleet once it lists the built-ins.
for a in "${addrs[@]}"; do
  for _ in $(seq 1 200); do
    ./target/release/a2a-commands ctl --addr "$a" list 2>/dev/null | grep -q '^/status' && break
    sleep 0.05
  done
done
./target/release/a2a-commands-load --fleet "$(IFS=,; echo "${addrs[*]}")" --sled "$sled" \
  --registrations "${BENCH_FLEET_REGISTRATIONS:-1000}"
