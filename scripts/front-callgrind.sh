#!/usr/bin/env bash
# Instructions the sidecar executes per request through the front, counted by valgrind's
# callgrind while h2load (HTTP/1.1, 2 connections) drives it: a plain SendMessage passed
# to the agent (the floor: the front's cheapest work), the card (the agent's, cached,
# merged with the registry's entry at each request), and /status answered by the front (a
# new task, its record written and synced). The agent is tests/agents/go
# (a plain a2a-go echo agent), outside valgrind. Counts the sidecar's threads, not the
# kernel: what our process costs, a count that does not drift with the machine.
#
# Then the same plain SendMessage through nginx (one process, master_process off, with
# upstream keep-alive) and through HAProxy (one thread, `http-reuse always`), plain
# reverse proxies before the same agent, also under callgrind: the floor a proxy hop is
# held to (issue 50). Each is skipped when missing.
#
#   apt-get install valgrind nghttp2-client
#   bash scripts/front-callgrind.sh          # FRONT_CALLGRIND_CALLS (2000) a row
#   CALLGRIND_KEEP=DIR FRONT_CALLGRIND_ARGS=--cache-sim=yes bash scripts/front-callgrind.sh
#                                            # each row's dump kept, with simulated cache misses
#   FRONT_CALLGRIND_BIN=/path/to/a2a-commands bash scripts/front-callgrind.sh
#                                            # another build counted (say, an older commit's), none made
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in h2load valgrind callgrind_annotate callgrind_control go; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (valgrind, nghttp2-client, Go)" >&2; exit 1; }
done
calls=${FRONT_CALLGRIND_CALLS:-2000}

bin=${FRONT_CALLGRIND_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release --locked --bin a2a-commands
  bin=./target/release/a2a-commands
fi
dir=$(mktemp -d)
(cd tests/agents/go && go build -o "$dir/agent" .)
"$dir/agent" >"$dir/agent.out" &
agent_pid=$!
# --fair-sched: without it the server can spin for minutes in sled's start-up under
# valgrind (as in scripts/callgrind.sh).
valgrind --tool=callgrind --fair-sched=yes ${FRONT_CALLGRIND_ARGS:-} --callgrind-out-file="$dir/cg.out" \
  "$bin" serve --listen 127.0.0.1:0 --health-listen off \
  --data-dir "$dir/data" --log-format json --call-log-sample 1000000 \
  --front-upstream "$(for _ in $(seq 100); do [ -s "$dir/agent.out" ] && break; sleep 0.1; done; head -1 "$dir/agent.out")" \
  --front-listen 127.0.0.1:0 --front-default-role assignee 2>"$dir/server.log" &
server=$!
trap 'kill $server $agent_pid 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 600); do grep -q '"serving"' "$dir/server.log" 2>/dev/null && break; sleep 0.2; done # valgrind starts slowly
grep -q '"serving"' "$dir/server.log" || { echo "the front did not start under valgrind:" >&2; tail -5 "$dir/server.log" >&2; exit 1; }
front=$(grep -m1 '"serving"' "$dir/server.log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["front_addr"])')

message() { # $1: text
  printf '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"%s"}]}}}' "$1"
}
message hello >"$dir/plain.json"
message /status >"$dir/status.json"
run() { # $1: row
  local args=()
  case $1 in
    card) args=("http://$front/.well-known/agent-card.json") ;;
    plain) args=(-d "$dir/plain.json" -H 'content-type: application/json' -H 'a2a-version: 1.0' "http://$front/") ;;
    status) args=(-d "$dir/status.json" -H 'content-type: application/json' -H 'a2a-version: 1.0' "http://$front/") ;;
    nginx) args=(-d "$top/plain.json" -H 'content-type: application/json' -H 'a2a-version: 1.0' "http://$nginx_addr/") ;;
    haproxy) args=(-d "$top/plain.json" -H 'content-type: application/json' -H 'a2a-version: 1.0' "http://$haproxy_addr/") ;;
  esac
  h2load --h1 -n "$calls" -c 2 "${args[@]}" | grep -q "$calls succeeded"
}
. scripts/callgrind-per-call.sh

for row in card plain status; do run "$row"; done # warm-up: connections, caches, the card
floor=$(per_call plain)
echo "| request ($calls, h2load --h1) | instructions per request | floor ÷ request |"
echo "| --- | ---: | ---: |"
printf '| plain SendMessage, passed to the agent (floor) | %.0f | 1.00 |\n' "$floor"
for row in card status; do
  this=$(per_call "$row")
  printf '| %s | %.0f | %.2f |\n' "$row" "$this" "$(awk -v a="$floor" -v b="$this" 'BEGIN {print a / b}')"
done

# nginx and HAProxy before the same agent, counted the same way (each skipped when
# missing).
agent_addr=$(head -1 "$dir/agent.out"); agent_addr=${agent_addr#http://}; agent_addr=${agent_addr%/}
nginx_port=""
if command -v nginx >/dev/null; then
  nginx_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  nginx_addr="127.0.0.1:$nginx_port"
  mkdir -p "$dir/nginx"
  . scripts/nginx-config.sh
  nginx_config "$dir/nginx" "$nginx_addr" "$agent_addr" "master_process off;" 1024 16 >"$dir/nginx/nginx.conf"
fi
front_server=$server
top=$dir
# Counts one proxy before the same agent the way the front was counted, each in a
# directory of its own (per_call numbers its dumps from 1 again).
proxy_row() { # $1: row, $2: its port, $3: its name, the rest: its command
  local row=$1 port=$2 name=$3 this
  shift 3
  dir=$top/$row-counts
  mkdir -p "$dir"
  valgrind --tool=callgrind ${FRONT_CALLGRIND_ARGS:-} --callgrind-out-file="$dir/cg.out" "$@" 2>"$top/$row.log" &
  server=$!
  for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done
  run "$row" # warm-up
  this=$(per_call "$row")
  printf '| plain SendMessage through %s (a plain reverse proxy) | %.0f | %.2f |\n' "$name" "$this" "$(awk -v a="$floor" -v b="$this" 'BEGIN {print a / b}')"
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
}
server=""
trap 'kill $front_server $server $agent_pid 2>/dev/null; wait $front_server 2>/dev/null; rm -rf "$top"' EXIT
if [ -n "$nginx_port" ]; then
  proxy_row nginx "$nginx_port" nginx nginx -c "$top/nginx/nginx.conf" -p "$top/nginx"
else
  echo "(nginx is missing: its row is skipped)"
fi
if command -v haproxy >/dev/null; then
  haproxy_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  haproxy_addr="127.0.0.1:$haproxy_port"
  . scripts/haproxy-config.sh
  haproxy_config 1 "$haproxy_addr" "$agent_addr" >"$top/haproxy.cfg"
  proxy_row haproxy "$haproxy_port" HAProxy haproxy -f "$top/haproxy.cfg" -db
else
  echo "(haproxy is missing: its row is skipped)"
fi
