#!/usr/bin/env bash
# Memory per connection (BENCHMARKS.md, issue 50), the front beside nginx in one run:
#
#   idle: FRONT_MEMORY_CONNECTIONS (2,000) keep-alive connections, each after one plain
#         SendMessage answered by the agent (tests/agents/go), then left open;
#   streams: as many SendStreamingMessage streams held open by a slow agent (one that
#         sends the stream's first event and then nothing; a Python asyncio agent below).
#
# Each proxy's resident set (VmRSS of its one process: nginx runs one worker with
# master_process off) before the connections are opened and once all are open, and the
# difference per connection. Both proxies are started fresh for each measure.
#
#   cargo build --release --bin a2a-commands
#   bash scripts/front-memory.sh          # needs nginx (apt-get install nginx) and Go
set -euo pipefail
cd "$(dirname "$0")/.."
count="${FRONT_MEMORY_CONNECTIONS:-2000}"
bin="${FRONT_BENCH_SERVER:-target/release/a2a-commands}"
command -v nginx >/dev/null || { echo "front-memory: nginx is missing (apt-get install nginx)" >&2; exit 1; }
[[ -x $bin ]] || { echo "front-memory: $bin is missing (cargo build --release --bin a2a-commands)" >&2; exit 1; }
# Every connection through a proxy is two descriptors there, and one at the agent.
ulimit -n "$(( count * 3 + 1000 ))" 2>/dev/null || ulimit -n "$(ulimit -Hn)"

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
first_line() { # $1: file
  for _ in $(seq 300); do [[ -s $1 ]] && { head -1 "$1"; return; }; sleep 0.1; done
  echo "front-memory: nothing written to $1" >&2; exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

(cd tests/agents/go && go build -o "$work/agent" .)
ECHO_AGENT_KEEP_TASKS=5000 "$work/agent" >"$work/agent.out" &
pids+=($!)
echo_agent=$(first_line "$work/agent.out")

# The slow agent: answers any POST with an event stream, its first event at once, then
# holds the stream open until the client leaves.
cat >"$work/slow.py" <<'PY'
import asyncio, sys

EVENT = b'data: {"jsonrpc":"2.0","id":1,"result":{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}}\n\n'

async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                         b"transfer-encoding: chunked\r\n\r\n"
                         + b"%x\r\n" % len(EVENT) + EVENT + b"\r\n")
            await writer.drain()
            await reader.read()  # until the client leaves
            return
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()

async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=4096)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()

asyncio.run(main())
PY
python3 "$work/slow.py" >"$work/slow.out" &
pids+=($!)
slow_agent=$(first_line "$work/slow.out")

start_front() { # $1: agent URL; prints the front's URL and pid
  local log="$work/front-$RANDOM.log"
  "$bin" serve --listen 127.0.0.1:0 --health-listen off --data-dir "$work/data-$RANDOM" --log-format json \
    --front-upstream "$1" --front-listen 127.0.0.1:0 --front-default-role assignee \
    --call-log-sample 1000000 2>"$log" &
  local pid=$!
  pids+=($pid)
  for _ in $(seq 300); do grep -q '"serving"' "$log" 2>/dev/null && break; sleep 0.1; done
  echo "http://$(grep -m1 '"serving"' "$log" | python3 -c 'import json,sys; print(json.load(sys.stdin)["front_addr"])') $pid"
}
. scripts/nginx-config.sh
start_nginx() { # $1: agent URL; prints nginx's URL and pid
  local port dir
  port=$(free_port)
  dir="$work/nginx-$port"
  mkdir -p "$dir"
  # Every connection held open: enough descriptors, kept alive across requests, a slow
  # agent's stream passed on as it comes.
  nginx_config "$dir" "127.0.0.1:$port" "${1#http://}" \
    "master_process off; worker_rlimit_nofile $(( count * 3 + 1000 ));" $(( count * 2 + 100 )) 64 \
    "keepalive_requests 100000;" "proxy_buffering off; proxy_read_timeout 1h;" >"$dir/nginx.conf"
  nginx -c "$dir/nginx.conf" -p "$dir" 2>"$dir/stderr" &
  local pid=$!
  pids+=($pid)
  for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  echo "http://127.0.0.1:$port $pid"
}

measure() { # $1: what, $2: proxy URL, $3: its pid
  python3 - "$1" "$2" "$3" "$count" <<'PY'
import json, socket, sys, time, urllib.parse

what, url, pid, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
parsed = urllib.parse.urlparse(url)

def rss_kib() -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit("no VmRSS")

def request(method: str, i: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                       "params": {"message": {"messageId": f"m-{i}-{time.time_ns()}", "role": "ROLE_USER",
                                              "parts": [{"text": "hello"}]}}}).encode()
    return (f"POST / HTTP/1.1\r\nHost: {parsed.netloc}\r\nContent-Type: application/json\r\n"
            f"A2A-Version: 1.0\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body

def until(sock, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:
        chunk = sock.recv(65536)
        if not chunk:
            raise SystemExit(f"{url}: closed before {marker!r}")
        seen += chunk
    return seen

# Warm: the proxy's pools, caches and first allocations.
for i in range(50):
    with socket.create_connection((parsed.hostname, parsed.port)) as sock:
        sock.sendall(request("SendMessage", i))
        until(sock, b"\r\n\r\n")
time.sleep(0.5)
before = rss_kib()
held = []
for i in range(count):
    sock = socket.create_connection((parsed.hostname, parsed.port))
    if what == "idle":
        sock.sendall(request("SendMessage", i))
        seen = until(sock, b"\r\n\r\n")
        length = next(int(l.split(b":")[1]) for l in seen.split(b"\r\n") if l.lower().startswith(b"content-length:"))
        body = seen.split(b"\r\n\r\n", 1)[1]
        while len(body) < length:
            body += sock.recv(65536)
    else:
        sock.sendall(request("SendStreamingMessage", i))
        until(sock, b"data:")
    held.append(sock)
time.sleep(1)
after = rss_kib()
print(f"{(after - before) / count:.1f} {before} {after}")
for sock in held:
    sock.close()
PY
}

echo "| $count connections | the front, KiB a connection | nginx, KiB a connection |"
echo "| --- | ---: | ---: |"
for what in idle streams; do
  agent=$echo_agent; [[ $what == streams ]] && agent=$slow_agent
  read -r front_url front_pid < <(start_front "$agent")
  front=$(measure "$what" "$front_url" "$front_pid")
  kill "$front_pid"
  read -r nginx_url nginx_pid < <(start_nginx "$agent")
  ours=$(measure "$what" "$nginx_url" "$nginx_pid")
  kill "$nginx_pid"
  label="idle keep-alive, after one SendMessage each"
  [[ $what == streams ]] && label="open streams to a slow agent"
  printf '| %s | %s (%s -> %s KiB) | %s (%s -> %s KiB) |\n' "$label" $front $ours
done
