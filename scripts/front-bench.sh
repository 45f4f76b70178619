#!/usr/bin/env bash
# The front's cost, side by side in one run (BENCHMARKS.md, "The front"). The agent is
# tests/agents/go (a plain a2a-go echo agent, fast enough that the front's own cost
# shows); the client is wrk, with keep-alive connections. Each round, in this order:
#
#   SendMessage straight to the agent and through the front, FRONT_BENCH_CONNECTIONS
#   connections (8), in the order direct, front, front, direct (see pair below): throughput, the front's as a ratio to the direct run;
#   the same pair with the agent and wrk held to CPU 0 and the sidecar to CPU 1 (taskset;
#   a sidecar's usual place, a CPU request of its own): whether the front cuts the
#   agent's throughput when it does not take the agent's CPU;
#   the same with one connection, one request at a time: the p50 the front adds;
#   /status answered by the front, and by the Go kit's gateway (clients/go/tools/
#   benchgateway, the README's gateway, on the same sidecar): the ratio of the two.
#
#   gRPC SendMessage (h2load, unary, the same plain message) straight to the agent's
#   gRPC port and through the front's, direct, front, front, direct, sharing the CPUs
#   and pinned as above (issue 44: at least 0.95 of direct).
#
#   SendMessage through nginx, a plain reverse proxy before the same agent (2 workers,
#   upstream keep-alive), against the front, mirrored (front, nginx, nginx, front), with
#   FRONT_BENCH_CONNECTIONS connections and with one: the front's throughput as a ratio
#   to nginx's, the p50 each adds (issue 48), and the CPU time each proxy spent a
#   request in the same runs (user and system, all its threads and workers: what the
#   hop costs the machine, which drifts far less than throughput does; skipped with a
#   line when nginx is missing: apt-get install nginx). The same against HAProxy (2 threads, `http-reuse
#   always`; skipped when missing: apt-get install haproxy).
#
# Then the hop alone: front against nginx (and HAProxy) as above (and against nginx with
# one connection, for the p50 each adds), all before an upstream
# that answers every request at once with the same fixed answer (nginx's `return 200`),
# so that the proxies' own cost decides the throughput rather than the agent's; skipped
# without nginx.
#
# Then, once: the first event of a stream (SendStreamingMessage, 300 one at a time,
# direct and through the front: the median time to the first event), and the front's
# memory per idle keep-alive connection (1,000 of them, its resident set before and
# after). Rounds: FRONT_BENCH_ROUNDS (3); each row's median is reported.
#
#   cargo build --release --bin a2a-commands
#   bash scripts/front-bench.sh            # needs wrk (apt-get install wrk) and Go
set -euo pipefail
cd "$(dirname "$0")/.."

rounds="${FRONT_BENCH_ROUNDS:-3}"
seconds="${FRONT_BENCH_SECONDS:-5}"
connections="${FRONT_BENCH_CONNECTIONS:-8}"
bin="${FRONT_BENCH_SERVER:-target/release/a2a-commands}"
command -v wrk >/dev/null || { echo "front-bench: wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v go >/dev/null || { echo "front-bench: go is missing (Go 1.25 or newer)" >&2; exit 1; }
[[ -x $bin ]] || { echo "front-bench: $bin is missing (cargo build --release --bin a2a-commands)" >&2; exit 1; }

# One benchmark at a time: two at once (or a build beside one) measure each other. The
# lock is held until the script exits; a busy machine is said, not refused.
exec 9>"${TMPDIR:-/tmp}/a2a-commands-bench.lock"
flock -n 9 || { echo "front-bench: another benchmark is running (${TMPDIR:-/tmp}/a2a-commands-bench.lock)" >&2; exit 1; }
read -r load _ </proc/loadavg
if awk -v l="$load" 'BEGIN { exit !(l > 0.5) }'; then
  echo "front-bench: the machine is busy (load average $load over the last minute); the ratios below move with it" >&2
fi

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

(cd tests/agents/go && go build -o "$work/agent" .)
(cd clients/go && go build -o "$work/gateway" ./tools/benchgateway)

# Each Go program prints where it listens on its first line.
first_line() { # $1: file
  for _ in $(seq 300); do [[ -s $1 ]] && { head -1 "$1"; return; }; sleep 0.1; done
  echo "front-bench: nothing written to $1" >&2; exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { # $1: a port on 127.0.0.1
  for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done
}
# A sidecar whose front is before $2; sets `started` (its pid) and `serving` (its line).
start_sidecar() { # $1: a name for its files, $2: the agent's URL, then more flags
  "$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data-$1" --log-format json \
    --front-upstream "$2" --front-listen 127.0.0.1:0 --front-default-role assignee \
    --call-log-sample 1000000 "${@:3}" 2>"$work/serve-$1.log" &
  started=$!
  pids+=($started)
  for _ in $(seq 300); do grep -q '"serving"' "$work/serve-$1.log" 2>/dev/null && break; sleep 0.1; done
  serving=$(grep -m1 '"serving"' "$work/serve-$1.log")
}
front_of() { python3 -c 'import json,sys; print("http://" + json.loads(sys.argv[1])["front_addr"])' "$serving"; }
# A reverse proxy before $2 (host:port); sets `started` (its pid) and `proxy_url`.
start_nginx() { # $1: a name for its files, $2: the agent's host:port
  local port
  port=$(free_port)
  mkdir -p "$work/$1"
  nginx_config "$work/$1" "127.0.0.1:$port" "$2" "worker_processes 2;" 4096 64 >"$work/$1/nginx.conf"
  nginx -c "$work/$1/nginx.conf" -p "$work/$1" &
  started=$!
  pids+=($started)
  proxy_url="http://127.0.0.1:$port"
  wait_port "$port"
}
start_haproxy() { # as start_nginx
  local port
  port=$(free_port)
  haproxy_config 2 "127.0.0.1:$port" "$2" >"$work/$1.cfg"
  haproxy -f "$work/$1.cfg" -db >"$work/$1.log" 2>&1 &
  started=$!
  pids+=($started)
  proxy_url="http://127.0.0.1:$port"
  wait_port "$port"
}
. scripts/nginx-config.sh
. scripts/haproxy-config.sh

# The agent forgets old tasks (ECHO_AGENT_KEEP_TASKS): its cost per message stays the
# same over the whole run, so rows taken minutes apart compare.
ECHO_AGENT_KEEP_TASKS=5000 ECHO_AGENT_GRPC=1 "$work/agent" >"$work/agent.out" &
pids+=($!)
agent=$(first_line "$work/agent.out")
for _ in $(seq 300); do [[ $(wc -l <"$work/agent.out") -ge 2 ]] && break; sleep 0.1; done
agent_grpc=$(sed -n 2p "$work/agent.out")

start_sidecar main "$agent"
sidecar_pid=$started
front=$(front_of)
api=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["addr"])' "$serving")

# nginx before the same agent, as operators run it: a plain reverse proxy with
# keep-alive connections to the agent.
nginx_url=""
if command -v nginx >/dev/null; then
  start_nginx nginx "${agent#http://}"
  nginx_pid=$started
  nginx_url=$proxy_url
else
  echo "front-bench: nginx is missing (apt-get install nginx): its rows are skipped" >&2
fi

# HAProxy before the same agent: two threads, connections to the agent kept and shared.
haproxy_url=""
if command -v haproxy >/dev/null; then
  start_haproxy haproxy "${agent#http://}"
  haproxy_pid=$started
  haproxy_url=$proxy_url
else
  echo "front-bench: haproxy is missing (apt-get install haproxy): its rows are skipped" >&2
fi

A2A_COMMANDS_ADDR=$api "$work/gateway" kit >"$work/gateway.out" &
pids+=($!)
gateway="http://127.0.0.1:$(first_line "$work/gateway.out" | awk '{print $2}')"

lua() { # $1: method, $2: the message text
  cat <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["A2A-Version"] = "1.0"
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"jsonrpc":"2.0","id":%d,"method":"$1","params":{"message":{"messageId":"m-%d-%d","role":"ROLE_USER","parts":[{"text":"$2"}]}}}', n, math.random(1, 1000000000), n)
  return wrk.format(nil, "/", nil, body)
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.1f %.3f %.3f %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.timeout,
    summary.requests))
end
LUA
}
lua SendMessage "hello" >"$work/plain.lua"
lua SendMessage "/status" >"$work/status.lua"

run() { # $1: URL, $2: script, $3: connections [, $4: CPUs for wrk] -> "rps p50_ms p99_ms errors"
  run_counted "$@" | cut -d' ' -f1-4
}
run_counted() { # as run, then the requests made
  local threads=2 pin=()
  [[ $3 -eq 1 ]] && threads=1
  [[ -n ${4:-} ]] && pin=(taskset -c "$4")
  "${pin[@]}" wrk -t "$threads" -c "$3" -d "${seconds}s" -s "$2" "$1" | awk '/^RESULT/ {print $2, $3, $4, $5, $6}'
}
# The CPU time (µs) a process and its children (nginx's workers) have run, all their
# threads: user and system, from schedstat (nanoseconds; /proc/<pid>/stat counts ticks
# of 10 ms).
cpu_us() { # $1: pid
  local total=0 p t ns
  for p in "$1" $(pgrep -P "$1" || true); do
    for t in /proc/"$p"/task/*/schedstat; do
      read -r ns _ <"$t" 2>/dev/null && total=$((total + ns))
    done
  done
  echo $((total / 1000))
}
# One plain run through a proxy, with the CPU the proxy spent on it: a request's cost
# that the machine's drift moves much less than it moves throughput.
costed() { # $1: URL, $2: connections, $3: the proxy's pid -> "rps p50 p99 errors cpu_us_a_request"
  local before after rps p50 p99 errors requests
  before=$(cpu_us "$3")
  read -r rps p50 p99 errors requests < <(run_counted "$1" "$work/plain.lua" "$2")
  after=$(cpu_us "$3")
  echo "$rps $p50 $p99 $errors $(python3 -c "print(f'{($after - $before) / max($requests, 1):.1f}')")"
}
# Direct, front, front, direct: whatever drifts over a run (the machine's other load)
# is cancelled out of the ratio by the two mirrored halves.
# Prints the direct then the front "rps p50 p99 errors", each the mean of its two runs.
pair() { # $1: connections [, $2: CPUs for wrk]
  local a b c d
  a=$(run "$agent" "$work/plain.lua" "$1" "${2:-}")
  b=$(run "$front" "$work/plain.lua" "$1" "${2:-}")
  c=$(run "$front" "$work/plain.lua" "$1" "${2:-}")
  d=$(run "$agent" "$work/plain.lua" "$1" "${2:-}")
  python3 -c '
import sys
runs = [list(map(float, r.split())) for r in sys.argv[1:]]
mean = lambda x, y: [(p + q) / 2 for p, q in zip(x, y)]
print(" ".join(f"{v:.3f}" for v in mean(runs[0], runs[3]) + mean(runs[1], runs[2])))' "$a" "$b" "$c" "$d"
}
# The front against another proxy, mirrored: front, proxy, proxy, front. Prints the
# front then the proxy "rps p50 p99 errors cpu_us_a_request", each the mean of its two
# runs.
versus() { # $1: the proxy's URL, $2: connections, $3: the proxy's pid [, $4: the front's URL, $5: its pid]
  local a b c d
  a=$(costed "${4:-$front}" "$2" "${5:-$sidecar_pid}")
  b=$(costed "$1" "$2" "$3")
  c=$(costed "$1" "$2" "$3")
  d=$(costed "${4:-$front}" "$2" "${5:-$sidecar_pid}")
  python3 -c '
import sys
runs = [list(map(float, r.split())) for r in sys.argv[1:]]
mean = lambda x, y: [(p + q) / 2 for p, q in zip(x, y)]
print(" ".join(f"{v:.3f}" for v in mean(runs[0], runs[3]) + mean(runs[1], runs[2])))' "$a" "$b" "$c" "$d"
}
# Pins every thread of a process (and so the threads it starts later) to the CPUs given.
pin() { taskset -apc "$2" "$1" >/dev/null; } # $1: pid, $2: CPU list
agent_pid=${pids[0]}
all_cpus="0-$(($(nproc) - 1))"
pinned=$([[ $(nproc) -ge 2 ]] && command -v taskset >/dev/null && echo 1 || echo 0)
# One gRPC SendMessageRequest in its frame, by hand: message (2) { message_id (1),
# role (4) = ROLE_USER, parts (5) { text (1) = "hello" } }.
python3 - "$work/grpc.body" <<'PY'
import struct, sys
def field(number, payload):  # a length-delimited field
    return bytes([number << 3 | 2, len(payload)]) + payload
message = field(1, b"m-grpc-bench") + bytes([4 << 3, 1]) + field(5, field(1, b"hello"))
request = field(2, message)
open(sys.argv[1], "wb").write(b"\0" + struct.pack(">I", len(request)) + request)
PY
grpc_run() { # $1: host:port [, $2: CPUs for h2load] -> requests a second
  local pin=()
  [[ -n ${2:-} ]] && pin=(taskset -c "$2")
  "${pin[@]}" h2load -n "$((seconds * 1500))" -c "$connections" -m 1 -t 2 -d "$work/grpc.body" \
    -H 'content-type: application/grpc' -H 'te: trailers' \
    "http://$1/lf.a2a.v1.A2AService/SendMessage" | awk '/^finished in/ {print $4}'
}
grpc_pair() { # [$1: CPUs for h2load] -> "direct front" requests a second, each a mean of two
  local a b c d
  a=$(grpc_run "$agent_grpc" "${1:-}"); b=$(grpc_run "$front_addr" "${1:-}")
  c=$(grpc_run "$front_addr" "${1:-}"); d=$(grpc_run "$agent_grpc" "${1:-}")
  python3 -c "import sys; a,b,c,d=map(float,sys.argv[1:]); print(f'{(a+d)/2:.1f} {(b+c)/2:.1f}')" "$a" "$b" "$c" "$d"
}
front_addr=${front#http://}
row() { printf "%-5s %-34s %10s %9s %9s %7s %8s\n" "$@"; }
ratio() { python3 -c "print(f'{$1 / $2:.3f}')"; }

# Warm every path.
run "$agent" "$work/plain.lua" 2 >/dev/null
run "$front" "$work/plain.lua" 2 >/dev/null
run "$gateway" "$work/status.lua" 2 >/dev/null

row round row "req/s" "p50 ms" "p99 ms" errors ratio
for r in $(seq "$rounds"); do
  read -r d_rps d_p50 d_p99 d_err f_rps f_p50 f_p99 f_err < <(pair "$connections")
  if [[ $pinned == 1 ]]; then
    pin "$agent_pid" 0
    pin "$sidecar_pid" 1
    read -r dp_rps dp_p50 dp_p99 dp_err fp_rps fp_p50 fp_p99 fp_err < <(pair "$connections" 0)
    pin "$agent_pid" "$all_cpus"
    pin "$sidecar_pid" "$all_cpus"
  else
    dp_rps=1 fp_rps=0
  fi
  read -r d1_rps d1_p50 d1_p99 d1_err f1_rps f1_p50 f1_p99 f1_err < <(pair 1)
  if command -v h2load >/dev/null; then
    read -r gd_rps gf_rps < <(grpc_pair)
    if [[ $pinned == 1 ]]; then
      pin "$agent_pid" 0
      pin "$sidecar_pid" 1
      read -r gdp_rps gfp_rps < <(grpc_pair 0)
      pin "$agent_pid" "$all_cpus"
      pin "$sidecar_pid" "$all_cpus"
    else
      gdp_rps=1 gfp_rps=0
    fi
  else
    gd_rps=1 gf_rps=0 gdp_rps=1 gfp_rps=0
  fi
  if [[ -n $nginx_url ]]; then
    read -r fn_rps fn_p50 fn_p99 fn_err fn_cpu n_rps n_p50 n_p99 n_err n_cpu < <(versus "$nginx_url" "$connections" "$nginx_pid")
    read -r fn1_rps fn1_p50 fn1_p99 fn1_err fn1_cpu n1_rps n1_p50 n1_p99 n1_err n1_cpu < <(versus "$nginx_url" 1 "$nginx_pid")
  else
    fn_rps=0 n_rps=1 fn1_p50=0 n1_p50=0 fn_cpu=0 n_cpu=1
  fi
  if [[ -n $haproxy_url ]]; then
    read -r fh_rps fh_p50 fh_p99 fh_err fh_cpu h_rps h_p50 h_p99 h_err h_cpu < <(versus "$haproxy_url" "$connections" "$haproxy_pid")
    read -r fh1_rps fh1_p50 fh1_p99 fh1_err fh1_cpu h1_rps h1_p50 h1_p99 h1_err h1_cpu < <(versus "$haproxy_url" 1 "$haproxy_pid")
  else
    fh_rps=0 h_rps=1 fh1_p50=0 h1_p50=0 fh_cpu=0 h_cpu=1
  fi
  read -r s_rps s_p50 s_p99 s_err < <(run "$front" "$work/status.lua" "$connections")
  read -r g_rps g_p50 g_p99 g_err < <(run "$gateway" "$work/status.lua" "$connections")
  row "$r" "SendMessage, direct, c=$connections" "$d_rps" "$d_p50" "$d_p99" "$d_err" "1.000"
  row "$r" "SendMessage, front, c=$connections" "$f_rps" "$f_p50" "$f_p99" "$f_err" "$(ratio "$f_rps" "$d_rps")"
  if [[ $pinned == 1 ]]; then
    row "$r" "SendMessage, direct, c=$connections, pinned" "$dp_rps" "$dp_p50" "$dp_p99" "$dp_err" "1.000"
    row "$r" "SendMessage, front, c=$connections, pinned" "$fp_rps" "$fp_p50" "$fp_p99" "$fp_err" "$(ratio "$fp_rps" "$dp_rps")"
  fi
  row "$r" "SendMessage, direct, c=1" "$d1_rps" "$d1_p50" "$d1_p99" "$d1_err" "1.000"
  row "$r" "SendMessage, front, c=1" "$f1_rps" "$f1_p50" "$f1_p99" "$f1_err" "$(ratio "$f1_rps" "$d1_rps")"
  row "$r" "gRPC SendMessage, direct, c=$connections" "$gd_rps" - - - "1.000"
  row "$r" "gRPC SendMessage, front, c=$connections" "$gf_rps" - - - "$(ratio "$gf_rps" "$gd_rps")"
  row "$r" "gRPC SendMessage, direct, pinned" "$gdp_rps" - - - "1.000"
  row "$r" "gRPC SendMessage, front, pinned" "$gfp_rps" - - - "$(ratio "$gfp_rps" "$gdp_rps")"
  if [[ -n $nginx_url ]]; then
    row "$r" "SendMessage, nginx, c=$connections" "$n_rps" "$n_p50" "$n_p99" "$n_err" "1.000"
    row "$r" "SendMessage, front vs nginx, c=$connections" "$fn_rps" "$fn_p50" "$fn_p99" "$fn_err" "$(ratio "$fn_rps" "$n_rps")"
    row "$r" "SendMessage, nginx, c=1" "$n1_rps" "$n1_p50" "$n1_p99" "$n1_err" "1.000"
    row "$r" "SendMessage, front vs nginx, c=1" "$fn1_rps" "$fn1_p50" "$fn1_p99" "$fn1_err" "$(ratio "$fn1_rps" "$n1_rps")"
    row "$r" "CPU µs a request, nginx, c=$connections" "$n_cpu" - - - "1.000"
    row "$r" "CPU µs a request, front, c=$connections" "$fn_cpu" - - - "$(ratio "$fn_cpu" "$n_cpu")"
  fi
  if [[ -n $haproxy_url ]]; then
    row "$r" "SendMessage, HAProxy, c=$connections" "$h_rps" "$h_p50" "$h_p99" "$h_err" "1.000"
    row "$r" "SendMessage, front vs HAProxy, c=$connections" "$fh_rps" "$fh_p50" "$fh_p99" "$fh_err" "$(ratio "$fh_rps" "$h_rps")"
    row "$r" "SendMessage, HAProxy, c=1" "$h1_rps" "$h1_p50" "$h1_p99" "$h1_err" "1.000"
    row "$r" "SendMessage, front vs HAProxy, c=1" "$fh1_rps" "$fh1_p50" "$fh1_p99" "$fh1_err" "$(ratio "$fh1_rps" "$h1_rps")"
    row "$r" "CPU µs a request, HAProxy, c=$connections" "$h_cpu" - - - "1.000"
    row "$r" "CPU µs a request, front, c=$connections" "$fh_cpu" - - - "$(ratio "$fh_cpu" "$h_cpu")"
  fi
  row "$r" "/status, Go kit gateway, c=$connections" "$g_rps" "$g_p50" "$g_p99" "$g_err" "1.000"
  row "$r" "/status, front, c=$connections" "$s_rps" "$s_p50" "$s_p99" "$s_err" "$(ratio "$s_rps" "$g_rps")"
  echo "$(ratio "$f_rps" "$d_rps") $(ratio "$fp_rps" "$dp_rps") $(python3 -c "print(f'{$f1_p50 - $d1_p50:.3f}')") $(ratio "$s_rps" "$g_rps") $(ratio "$gf_rps" "$gd_rps") $(ratio "$gfp_rps" "$gdp_rps") $(ratio "$fn_rps" "$n_rps") $(python3 -c "print(f'{$n1_p50 - $d1_p50:.3f}')") $(ratio "$fh_rps" "$h_rps") $(python3 -c "print(f'{$h1_p50 - $d1_p50:.3f}')") $(python3 -c "print(f'{$fn1_p50 - $n1_p50:.3f}')") $(ratio "$fn_cpu" "$n_cpu") $(ratio "$fh_cpu" "$h_cpu")" >>"$work/ratios"
done
python3 - "$work/ratios" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
(through, pinned, added, status, grpc, grpc_pinned, vs_nginx, nginx_added, vs_haproxy,
 haproxy_added, over_nginx, cpu_nginx, cpu_haproxy) = (statistics.median(col) for col in zip(*rows))
print(f"median: SendMessage through the front {through:.3f} of direct (sharing the CPUs), "
      f"{pinned:.3f} (the sidecar on a CPU of its own; 0 if not run); p50 added at c=1 "
      f"{added:+.3f} ms; /status through the front {status:.2f}x the Go kit gateway's; "
      f"gRPC SendMessage through the front {grpc:.3f} of direct, {grpc_pinned:.3f} pinned; "
      f"the front's throughput {vs_nginx:.3f} of nginx's (0 without nginx), nginx's p50 added at "
      f"c=1 {nginx_added:+.3f} ms, the front's p50 at c=1 {over_nginx:+.3f} ms over nginx's "
      f"(side by side); the front's throughput {vs_haproxy:.3f} of HAProxy's (0 without it), "
      f"HAProxy's p50 added at c=1 {haproxy_added:+.3f} ms; the front's CPU a request "
      f"{cpu_nginx:.3f} of nginx's, {cpu_haproxy:.3f} of HAProxy's (same runs)")
PY

# The hop alone: the same proxies before an upstream whose answer costs next to nothing
# (nginx answering every request with the echo agent's answer, fixed), so that the
# proxies' own cost, not the agent's (about 1.3 ms of CPU a SendMessage), decides the
# throughput. A second sidecar fronts it, beside a second nginx (and HAProxy).
if [[ -n $nginx_url ]]; then
  fixed_port=$(free_port)
  mkdir -p "$work/fixed"
  fixed_answer='{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"01a250cb-6bcc-7820-8f63-fee073b77807","contextId":"01a250cb-6bcc-789b-b1a5-12e688856df7","history":[{"messageId":"m-1","parts":[{"text":"hello"}],"role":"ROLE_USER"}],"status":{"message":{"messageId":"01a250cb-6bcc-7901-9992-d7cd779c76bf","contextId":"01a250cb-6bcc-789b-b1a5-12e688856df7","parts":[{"text":"echo: hello {}"}],"role":"ROLE_AGENT","taskId":"01a250cb-6bcc-7820-8f63-fee073b77807"},"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-12-07T13:57:18.41259089Z"}}}}'
  cat >"$work/fixed/nginx.conf" <<NGINX
worker_processes 1;
daemon off;
pid $work/fixed/nginx.pid;
error_log $work/fixed/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/fixed/body;
  server {
    listen 127.0.0.1:$fixed_port;
    location / { default_type application/json; return 200 '$fixed_answer'; }
  }
}
NGINX
  nginx -c "$work/fixed/nginx.conf" -p "$work/fixed" &
  pids+=($!)
  fixed="127.0.0.1:$fixed_port"
  wait_port "$fixed_port"
  start_sidecar fixed "http://$fixed" --health-listen off
  fixed_sidecar=$started
  fixed_front=$(front_of)
  start_nginx fixed-nginx "$fixed"
  fixed_nginx_pid=$started
  fixed_nginx_url=$proxy_url
  fixed_haproxy_url=""
  if [[ -n $haproxy_url ]]; then
    start_haproxy fixed-haproxy "$fixed"
    fixed_haproxy_pid=$started
    fixed_haproxy_url=$proxy_url
  fi
  run "$fixed_front" "$work/plain.lua" 2 >/dev/null # warm
  # A round's rows for the front against one proxy; $1: the round, $2: the proxy's name,
  # then the front's and the proxy's "rps p50 p99 errors cpu_us_a_request" (as versus).
  fixed_rows() {
    row "$1" "fixed: $2, c=$connections" "$8" "$9" "${10}" "${11}" "1.000"
    row "$1" "fixed: front vs $2, c=$connections" "$3" "$4" "$5" "$6" "$(ratio "$3" "$8")"
    row "$1" "fixed: CPU µs a request, $2" "${12}" - - - "1.000"
    row "$1" "fixed: CPU µs a request, front" "$7" - - - "$(ratio "$7" "${12}")"
  }
  row round "the hop alone (a fixed answer)" "req/s" "p50 ms" "p99 ms" errors ratio
  for r in $(seq "$rounds"); do
    read -r xf_rps xf_p50 xf_p99 xf_err xf_cpu xn_rps xn_p50 xn_p99 xn_err xn_cpu \
      < <(versus "$fixed_nginx_url" "$connections" "$fixed_nginx_pid" "$fixed_front" "$fixed_sidecar")
    fixed_rows "$r" nginx "$xf_rps" "$xf_p50" "$xf_p99" "$xf_err" "$xf_cpu" "$xn_rps" "$xn_p50" "$xn_p99" "$xn_err" "$xn_cpu"
    # One at a time: the p50 each proxy adds, with the agent's own time out of it.
    read -r xf1_rps xf1_p50 xf1_p99 xf1_err _ xn1_rps xn1_p50 xn1_p99 xn1_err _ \
      < <(versus "$fixed_nginx_url" 1 "$fixed_nginx_pid" "$fixed_front" "$fixed_sidecar")
    row "$r" "fixed: nginx, c=1" "$xn1_rps" "$xn1_p50" "$xn1_p99" "$xn1_err" "1.000"
    row "$r" "fixed: front vs nginx, c=1" "$xf1_rps" "$xf1_p50" "$xf1_p99" "$xf1_err" "$(ratio "$xf1_rps" "$xn1_rps")"
    xh=(0 1 0 1)
    if [[ -n $fixed_haproxy_url ]]; then
      read -r yf_rps yf_p50 yf_p99 yf_err yf_cpu yh_rps yh_p50 yh_p99 yh_err yh_cpu \
        < <(versus "$fixed_haproxy_url" "$connections" "$fixed_haproxy_pid" "$fixed_front" "$fixed_sidecar")
      fixed_rows "$r" HAProxy "$yf_rps" "$yf_p50" "$yf_p99" "$yf_err" "$yf_cpu" "$yh_rps" "$yh_p50" "$yh_p99" "$yh_err" "$yh_cpu"
      xh=("$yf_rps" "$yh_rps" "$yf_cpu" "$yh_cpu")
    fi
    echo "$(ratio "$xf_rps" "$xn_rps") $(ratio "$xf_cpu" "$xn_cpu") $(ratio "${xh[0]}" "${xh[1]}") $(ratio "${xh[2]}" "${xh[3]}") $(python3 -c "print(f'{$xf1_p50 - $xn1_p50:.3f}')")" >>"$work/fixed-ratios"
  done
  python3 - "$work/fixed-ratios" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
vs_nginx, cpu_nginx, vs_haproxy, cpu_haproxy, over_nginx = (statistics.median(col) for col in zip(*rows))
print(f"median, the hop alone (a fixed answer): the front's throughput {vs_nginx:.3f} of nginx's, "
      f"its CPU a request {cpu_nginx:.3f} of nginx's, its p50 at c=1 {over_nginx:+.3f} ms over "
      f"nginx's; {vs_haproxy:.3f} of HAProxy's throughput, {cpu_haproxy:.3f} of its CPU a request "
      f"(0 without HAProxy)")
PY
fi

# The first event of a stream, and memory per idle connection: one client, in Python.
python3 - "$agent" "$front" "$sidecar_pid" <<'PY'
import json, socket, statistics, sys, time, urllib.parse

agent, front, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])

def first_event(url: str, n: int) -> float:
    """Median ms from sending a streaming request to reading its first event."""
    parsed = urllib.parse.urlparse(url)
    times = []
    for i in range(n):
        body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "SendStreamingMessage",
                           "params": {"message": {"messageId": f"s-{i}-{time.time_ns()}", "role": "ROLE_USER",
                                                  "parts": [{"text": "stream"}]}}}).encode()
        head = (f"POST / HTTP/1.1\r\nHost: {parsed.netloc}\r\nContent-Type: application/json\r\n"
                f"A2A-Version: 1.0\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
        with socket.create_connection((parsed.hostname, parsed.port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            started = time.perf_counter()
            sock.sendall(head + body)
            seen = b""
            while b"data:" not in seen:
                chunk = sock.recv(65536)
                if not chunk:
                    raise SystemExit(f"{url}: the stream ended before an event")
                seen += chunk
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)

for url in (agent, front):  # warm
    first_event(url, 20)
direct, through = first_event(agent, 300), first_event(front, 300)
print(f"first stream event: direct {direct:.3f} ms, through the front {through:.3f} ms, "
      f"added {through - direct:+.3f} ms (median of 300)")

def rss_kib() -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit("no VmRSS")

parsed = urllib.parse.urlparse(front)
request = (f"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: {parsed.netloc}\r\n\r\n").encode()
before = rss_kib()
idle = []
for _ in range(1000):
    sock = socket.create_connection((parsed.hostname, parsed.port))
    sock.sendall(request)
    seen = b""
    while b"\r\n\r\n" not in seen:
        seen += sock.recv(65536)
    idle.append(sock)
time.sleep(1)
after = rss_kib()
print(f"idle connections: 1000 keep-alive connections after one card request each: resident set "
      f"{before} KiB -> {after} KiB, {(after - before) / 1000:.1f} KiB a connection")
for sock in idle:
    sock.close()
PY
