"""The front's HTTP/1.1 beside nginx and HAProxy (issue 62): the same bytes to each
proxy, each before a recording agent of its own, and what reached each agent compared.

The corpus is ours, from RFC 9112 §§2-7 and the request-smuggling literature: CL.TE,
TE.CL and TE.TE, obfuscated fields, chunk edge cases, LF-only lines and bare CRs,
obs-fold, request-line forms, Host rules, pipelining, Expect, Upgrade, h2c, bodies and
heads that stop arriving; and on the answer side (`ANSWERS`), the same agent answer
through each proxy: CL+TE, lengths short and long, 1xx, 204/304/HEAD with bodies,
close-delimited bodies, HTTP/1.0 chunked, many lines, malformed fields and chunks. A
case where the front forwards a request, or passes on an answer, that both peers refuse
is a failure. Where the front refuses a request both forward, `STRICTER` says why; an
answer it refuses is the agent's failure, and the client gets a 502 naming it.

Each proxy closes a connection soon after its last answer (keep-alive and read timeouts
of a second or two), so a case ends when the proxy closes; no case waits on a sleep."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
import time

import pytest

from conftest import start_server_line
from ports import free_port, wait_for_port
from raw_server import RawServer

# What the peers and the front are given alike: a request (head or body) may stop for
# a second before it is answered 408 or closed, an idle connection two.
READ_TIMEOUT_S = 1
IDLE_TIMEOUT_S = 2

H = b"Host: h\r\n"
CLOSE = b"Connection: close\r\n"
JSON_RPC = b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}'


class Recorder(RawServer):
    """An agent on a raw socket that records every request that reaches it whole (its
    method, target and body, read by its Content-Length or its chunks) and answers each
    200 "ok". A request cut short is not recorded: it was not forwarded whole."""

    def __init__(self) -> None:
        self.whole: list[tuple[str, str, bytes]] = []
        self.lock = threading.Lock()
        # When set, every request but the card's is answered with these bytes as they
        # are, and the connection then closed (the answer-side cases).
        self.answer: bytes | None = None
        super().__init__()

    def card(self) -> bytes:
        return json.dumps({
            "name": "recorder", "description": "records", "version": "1",
            "supportedInterfaces": [{"url": self.url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": [],
        }).encode()

    def serve(self, conn: socket.socket) -> None:
        conn.settimeout(30)
        with conn:
            reader = conn.makefile("rb")
            try:
                while self._one(conn, reader):
                    pass
            except (OSError, ValueError):
                return

    def _one(self, conn: socket.socket, reader) -> bool:
        line = reader.readline()
        if not line:
            return False
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            length = int(headers["content-length"])
            body = reader.read(length)
            if len(body) < length:
                return False
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while size := int(reader.readline().split(b";")[0], 16):
                chunk = reader.read(size + 2)
                if len(chunk) < size + 2:
                    return False
                body += chunk[:size]
            # The last chunk: trailer lines until an empty one.
            while (line := reader.readline()) not in (b"\r\n", b"\n"):
                if not line:
                    return False
        else:
            body = b""
        if target.endswith("/.well-known/agent-card.json"):
            card = self.card()
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(card)).encode() + b"\r\n\r\n" + card)
            return True
        with self.lock:
            self.whole.append((method, target, body))
        if self.answer is not None:
            conn.sendall(self.answer)
            return False
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
        return True

    def take(self) -> list[tuple[str, str, bytes]]:
        with self.lock:
            taken, self.whole = self.whole, []
        return taken



def start_nginx(tmp, agent: Recorder):
    port = free_port()
    conf = tmp / "nginx.conf"
    conf.write_text(f"""
master_process off;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 256; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  client_header_timeout {READ_TIMEOUT_S}s;
  client_body_timeout {READ_TIMEOUT_S}s;
  keepalive_timeout {IDLE_TIMEOUT_S}s;
  upstream agent {{ server 127.0.0.1:{agent.port}; keepalive 4; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://agent;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
""")
    proc = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(tmp)], stdin=subprocess.DEVNULL)
    wait_for_port(port)
    return proc, port


def start_haproxy(tmp, agent: Recorder):
    port = free_port()
    conf = tmp / "haproxy.cfg"
    conf.write_text(f"""
global
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client {IDLE_TIMEOUT_S}s
  timeout server 30s
  timeout http-request {READ_TIMEOUT_S}s
  timeout http-keep-alive {IDLE_TIMEOUT_S}s
  option http-buffer-request
frontend front
  bind 127.0.0.1:{port}
  default_backend agent
backend agent
  server agent 127.0.0.1:{agent.port}
""")
    proc = subprocess.Popen(["haproxy", "-f", str(conf)], stdin=subprocess.DEVNULL)
    wait_for_port(port)
    return proc, port


def start_front(tmp, agent: Recorder):
    proc, serving = start_server_line(
        tmp, "--front-upstream", f"http://127.0.0.1:{agent.port}", "--front-listen", "127.0.0.1:0",
        "--request-read-timeout-seconds", str(READ_TIMEOUT_S),
        "--idle-timeout-seconds", str(IDLE_TIMEOUT_S))
    return proc, int(serving["front_addr"].rsplit(":", 1)[1])


def exchange(port: int, parts: list[bytes]) -> bytes:
    """Sends `parts` in order on one connection (each its own write, a short pause
    between them) and reads until the proxy closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for i, part in enumerate(parts):
            if i:
                time.sleep(0.05)  # separate writes, not a timing the case depends on
            try:
                sock.sendall(part)
            except OSError:
                break
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except OSError:
            pass
    return answer


def messages(answer: bytes, head_only: bool = False) -> list[tuple[int, bytes]]:
    """Each answer on the connection, in order (1xx included): its status and its body,
    read by its Content-Length, its chunks, or to the close."""
    found = []
    while answer.startswith(b"HTTP/1."):
        head, sep, rest = answer.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ")[1])
        fields = {n.strip().lower(): v.strip() for n, _, v in (line.partition(b":") for line in lines[1:])}
        if head_only or 100 <= status < 200 or status in (204, 304):
            body, answer = b"", rest
        elif fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            body = b""
            while True:
                size_line, _, rest = rest.partition(b"\r\n")
                size = int(size_line.split(b";")[0] or b"0", 16)
                if size == 0:
                    answer = rest.partition(b"\r\n")[2]
                    break
                body, rest = body + rest[:size], rest[size + 2:]
        elif b"content-length" in fields:
            length = int(fields[b"content-length"])
            body, answer = rest[:length], rest[length:]
        else:
            body, answer = rest, b""  # delimited by the close
        found.append((status, body))
    return found


def statuses(answer: bytes) -> list[int]:
    """The status of each answer on the connection, in order (1xx included)."""
    return [status for status, _ in messages(answer)]


def chunked(*pieces: bytes) -> bytes:
    return b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces) + b"0\r\n\r\n"


# (name, the bytes as written, one write each)
CASES: list[tuple[str, list[bytes]]] = [
    ("plain GET", [b"GET /x HTTP/1.1\r\n" + H + CLOSE + b"\r\n"]),
    ("plain POST", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Content-Length: 5\r\n\r\nhello"]),
    ("JSON-RPC POST", [b"POST / HTTP/1.1\r\n" + H + CLOSE + b"Content-Type: application/json\r\nContent-Length: "
                       + str(len(JSON_RPC)).encode() + b"\r\n\r\n" + JSON_RPC]),
    ("chunked POST", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: chunked\r\n\r\n" + chunked(b"hello")]),
    ("LF-only head", [b"GET /x HTTP/1.1\nHost: h\nConnection: close\n\n"]),
    ("pipelined", [b"GET /a HTTP/1.1\r\n" + H + b"\r\nGET /b HTTP/1.1\r\n" + H + CLOSE + b"\r\n"]),
    ("absolute-form", [b"GET http://h/x HTTP/1.1\r\n" + H + CLOSE + b"\r\n"]),
    ("HTTP/1.0, no Host", [b"GET /x HTTP/1.0\r\n\r\n"]),
    # CL.TE and TE.CL: framed two ways at once.
    ("CL.TE", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"0\r\n\r\nGET /smuggled HTTP/1.1\r\n" + H + b"\r\n"]),
    ("TE.CL", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
               + b"8\r\nSMUGGLED\r\n0\r\n\r\n"]),
    # TE.TE: the field said so that one reader sees chunked and another does not.
    *[(f"TE {value!r}", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: " + value + b"\r\n\r\n"
                         + chunked(b"hello")])
      for value in (b"identity, chunked", b"gzip, chunked", b"chunked, chunked", b", chunked", b"xchunked",
                    b"chunked;x=1")],
    ("TE twice", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + chunked(b"hello")]),
    ("TE list with CL", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Content-Length: 15\r\n"
                         + b"Transfer-Encoding: identity, chunked\r\n\r\n" + chunked(b"hello")]),
    ("TE space before colon", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding : chunked\r\n\r\n"
                               + chunked(b"hello")]),
    ("TE obs-fold", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding:\r\n chunked\r\n\r\n" + chunked(b"hello")]),
    ("TE in HTTP/1.0", [b"POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(b"hello")]),
    # Content-Length said badly.
    ("CL signed", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Content-Length: +5\r\n\r\nhello"]),
    ("CL list", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Content-Length: 5, 5\r\n\r\nhello"]),
    ("CL twice, differing", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"]),
    # Chunks said badly.
    *[(f"chunk size {size!r}", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: chunked\r\n\r\n"
                                + size + b"\r\nhello\r\n0\r\n\r\n"])
      for size in (b"0x5", b"-5", b"10000000000000005", b"00000000000000005", b" 5", b"5 ;x")],
    ("chunk without its CRLF", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: chunked\r\n\r\n"
                                + b"5\r\nhelloXX0\r\n\r\n"]),
    ("chunk lines LF only", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: chunked\r\n\r\n"
                             + b"5\nhello\n0\n\n"]),
    ("chunk extension with a bare CR", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Transfer-Encoding: chunked\r\n\r\n"
                                        + b"5;a\rb\r\nhello\r\n0\r\n\r\n"]),
    # Heads said badly.
    ("bare CR in the request line", [b"POST /v1/x-long-path HTTP/1.1\rHost: h\r\nContent-Length: 0\r\n\r\n"]),
    ("bare CR in a value", [b"GET /x HTTP/1.1\r\n" + H + b"X-A: a\rb\r\n" + CLOSE + b"\r\n"]),
    ("NUL in a value", [b"GET /x HTTP/1.1\r\n" + H + b"X-A: a\x00b\r\n" + CLOSE + b"\r\n"]),
    ("space in a name", [b"GET /x HTTP/1.1\r\n" + H + b"X A: b\r\n" + CLOSE + b"\r\n"]),
    ("obs-fold", [b"GET /x HTTP/1.1\r\n" + H + b"X-A: a\r\n b\r\n" + CLOSE + b"\r\n"]),
    ("no Host", [b"GET /x HTTP/1.1\r\n" + CLOSE + b"\r\n"]),
    ("two Hosts", [b"GET /x HTTP/1.1\r\n" + H + b"Host: g\r\n" + CLOSE + b"\r\n"]),
    ("target not origin-form", [b"GET any-target HTTP/1.1\r\n" + H + CLOSE + b"\r\n"]),
    ("authority-form GET", [b"GET h:80 HTTP/1.1\r\n" + H + CLOSE + b"\r\n"]),
    ("OPTIONS *", [b"OPTIONS * HTTP/1.1\r\n" + H + CLOSE + b"\r\n"]),
    ("HTTP/2.0 in a request line", [b"GET /x HTTP/2.0\r\n" + H + CLOSE + b"\r\n"]),
    # Expect, Upgrade, h2c.
    ("Expect 100-continue", [b"POST /x HTTP/1.1\r\n" + H + CLOSE + b"Expect: 100-continue\r\nContent-Length: 5\r\n\r\n",
                             b"hello"]),
    ("Upgrade h2c", [b"GET /x HTTP/1.1\r\n" + H + b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
                     + b"HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n"]),
    ("h2c preface after a request", [b"GET /x HTTP/1.1\r\n" + H + b"\r\n" + b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                     + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"]),
]

# Cases that stop arriving: each proxy answers 408 or closes, after its read timeout.
STALLED: list[tuple[str, list[bytes]]] = [
    ("head stops", [b"GET /x HTTP/1.1\r\n" + H]),
    ("body stops", [b"POST /x HTTP/1.1\r\n" + H + b"Content-Length: 100\r\n\r\nhello"]),
    ("chunked body stops", [b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"]),
    ("JSON-RPC body stops", [b"POST / HTTP/1.1\r\n" + H + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"]),
]

# Where the front refuses what both peers forward, and why.
STRICTER = {
    "TE.CL": "HAProxy forwards CL+TE as chunked; the front refuses it (400), as nginx does: a "
             "request framed two ways is the CL.TE primitive whatever a later hop reads",
    "CL.TE": "as TE.CL",
    "target not origin-form": "RFC 9112 §3.2: a target that is neither origin- nor absolute-form is "
                              "malformed; the front would otherwise forward it as `/`",
    "chunk lines LF only": "RFC 9112 §7.1 ends every chunk line with CRLF; hyper's decoder, which reads "
                           "the front's chunked bodies, takes no bare LF there. A bare LF is where readers "
                           "disagree (nginx takes it, HAProxy too), and refusing is the side of a "
                           "disagreement that cannot desync",
}


@pytest.fixture(scope="module")
def proxies(tmp_path_factory):
    for tool in ("nginx", "haproxy"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is missing (.ci/run installs it)")
    agents = {name: Recorder() for name in ("front", "nginx", "haproxy")}
    started = [
        ("nginx", start_nginx(tmp_path_factory.mktemp("nginx"), agents["nginx"])),
        ("haproxy", start_haproxy(tmp_path_factory.mktemp("haproxy"), agents["haproxy"])),
        ("front", start_front(tmp_path_factory.mktemp("front"), agents["front"])),
    ]
    yield {name: (port, agents[name]) for name, (_, port) in started}
    for _, (proc, _) in started:
        proc.terminate()
        proc.wait(timeout=30)
    for agent in agents.values():
        agent.stop()


def outcome(proxies, name: str, parts: list[bytes]) -> dict:
    seen = {}
    for proxy, (port, agent) in proxies.items():
        agent.take()
        answer = exchange(port, parts)
        seen[proxy] = {"statuses": statuses(answer), "forwarded": agent.take()}
    return seen


def test_the_front_forwards_nothing_both_peers_refuse(proxies):
    table = []
    problems = []
    for name, parts in CASES + STALLED:
        seen = outcome(proxies, name, parts)
        front, nginx, haproxy = seen["front"], seen["nginx"], seen["haproxy"]
        table.append(f"{name:40} front {front['statuses']}/{len(front['forwarded'])}  "
                     f"nginx {nginx['statuses']}/{len(nginx['forwarded'])}  "
                     f"haproxy {haproxy['statuses']}/{len(haproxy['forwarded'])}")
        peers_forwarded = max(len(nginx["forwarded"]), len(haproxy["forwarded"]))
        if len(front["forwarded"]) > peers_forwarded:
            problems.append(f"{name}: the front forwarded {front['forwarded']}, the peers at most {peers_forwarded}")
        if not front["forwarded"] and nginx["forwarded"] and haproxy["forwarded"] and name not in STRICTER:
            problems.append(f"{name}: the front refused what both peers forward, and STRICTER says not why")
        # Whatever the front refuses, it answers with an error, never a success.
        if not front["forwarded"] and any(200 <= s < 300 for s in front["statuses"]):
            problems.append(f"{name}: answered {front['statuses']} with nothing forwarded")
    print("\n".join(table))
    assert not problems, "\n".join(problems + [""] + table)


@pytest.mark.parametrize("name,parts,status", [
    ("TE list", [b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: identity, chunked\r\n\r\n" + chunked(b"a")], 501),
    ("TE gzip, chunked", [b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked(b"a")], 501),
    ("TE twice", [b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + chunked(b"a")], 400),
    ("TE list after a handed-over request", [
        b"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked(b"a")], 501),
    ("bare CR", [b"POST /v1/x-long-path HTTP/1.1\rHost: h\r\nContent-Length: 0\r\n\r\n"], 400),
    ("h2c preface after a request", [b"GET /x HTTP/1.1\r\n" + H + b"\r\nPRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"], 400),
    ("target not origin-form", [b"GET any-target HTTP/1.1\r\n" + H + b"\r\n"], 400),
    ("chunk size 0x5", [b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"], 400),
    ("chunk size -5", [b"POST / HTTP/1.1\r\n" + H + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                       + b"-5\r\nhello\r\n0\r\n\r\n"], 400),
    ("chunk of 17 digits", [b"POST / HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n"
                            + b"10000000000000005\r\nhello\r\n0\r\n\r\n"], 400),
    ("chunk without its CRLF", [b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"], 400),
    ("body stops", [b"POST /x HTTP/1.1\r\n" + H + b"Content-Length: 100\r\n\r\nhello"], 408),
    ("chunked body stops", [b"POST /x HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"], 408),
    ("JSON-RPC body stops", [b"POST / HTTP/1.1\r\n" + H + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"],
     408),
    ("head stops", [b"GET /x HTTP/1.1\r\n" + H], 408),
])
def test_each_finding_is_refused_with_its_status_and_the_connection_closed(proxies, name, parts, status):
    port, agent = proxies["front"]
    agent.take()
    answer = exchange(port, parts)  # returns only once the front has closed the connection
    got = statuses(answer)
    assert got and got[-1] == status, (name, answer[:400])
    # Whatever came before it (a request served) is the agent's; the refused one is not.
    assert len(agent.take()) == len(got) - 1, name


# --- The answer side: the same answer from each proxy's agent, and what the client gets.

OK_BODY = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
ANSWERS: list[tuple[str, bytes, bytes]] = [
    # (name, the request's method line, the agent's answer as it is sent)
    ("plain", b"GET", OK_BODY),
    ("CL and TE", b"GET", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
    ("length longer than the body", b"GET", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok"),
    ("body longer than the length", b"GET", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\n"
                                            b"Content-Length: 4\r\n\r\nevil"),
    ("interim then final", b"GET", b"HTTP/1.1 100 Continue\r\n\r\n" + OK_BODY),
    ("204 with a body", b"GET", b"HTTP/1.1 204 No Content\r\nContent-Length: 4\r\n\r\nevil"),
    ("304 with a body", b"GET", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 4\r\n\r\nevil"),
    ("HEAD answered with a body", b"HEAD", b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil"),
    ("close-delimited", b"GET", b"HTTP/1.1 200 OK\r\n\r\nto the close"),
    ("HTTP/1.0 chunked", b"GET", b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
    ("150 header lines", b"GET", b"HTTP/1.1 200 OK\r\n" + b"X-A: 1\r\n" * 149 + b"Content-Length: 2\r\n\r\nok"),
    ("obs-fold in the answer", b"GET", b"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\nContent-Length: 2\r\n\r\nok"),
    ("space before a colon", b"GET", b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok"),
    ("two lengths", b"GET", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 4\r\n\r\nokok"),
    ("a status of four digits", b"GET", b"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok"),
    ("chunk extension with a bare CR", b"GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                               b"2;a\rb\r\nok\r\n0\r\n\r\n"),
    ("a trailer that is no field", b"GET", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                           b"2\r\nok\r\n0\r\nno field\r\n\r\n"),
]


def test_the_front_passes_on_no_answer_both_peers_refuse(proxies):
    table = []
    problems = []
    for name, method, answer in ANSWERS:
        seen = {}
        for proxy, (port, agent) in proxies.items():
            agent.answer = answer
            try:
                got = exchange(port, [method + b" /x HTTP/1.1\r\n" + H + CLOSE + b"\r\n"])
            finally:
                agent.answer = None
            agent.take()
            seen[proxy] = messages(got, head_only=method == b"HEAD")
        table.append(f"{name:32} " + "  ".join(f"{p} {[(st, b[:12]) for st, b in m]}" for p, m in seen.items()))
        # What reached the client as a success, by each proxy.
        passed = {p: [b for st, b in m if 200 <= st < 300] for p, m in seen.items()}
        if passed["front"] and not passed["nginx"] and not passed["haproxy"]:
            problems.append(f"{name}: the front passed on {passed['front']}, which both peers refuse")
        # Bytes after an answer's end are never a second answer, nor part of this one.
        if any(b"evil" in b for _, b in seen["front"]):
            problems.append(f"{name}: the client got bytes past the answer's end: {seen['front']}")
    print("\n".join(table))
    assert not problems, "\n".join(problems + [""] + table)
