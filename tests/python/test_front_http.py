"""The front as an HTTP proxy and a gateway of many callers (issue 48): compressed
agents, a command that cannot run, one context per task, callers kept apart, body
limits on every method, stalled agents, and the proxy details (Proxy-Connection,
CONNECT, JSON-RPC ids, malformed gRPC frames, application/a2a+json, empty task data).

The agents are real: a2a-sdk behind Starlette's GZipMiddleware, a2a-go behind nginx
with `gzip on`, and a raw-socket agent (below) for what no SDK does on purpose: answer
garbage, stall, or show exactly what reached it."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time
import uuid

import httpx
import pytest

from conftest import free_port, start_server_line
from front_agent import Agent
from ports import wait_for_port
from raw_server import RawServer
from test_front_sdks import start_agent

EXTENSION = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
V1 = {"A2A-Version": "1.0"}


def start_front(tmp: pathlib.Path, upstream: str, *flags: str):
    proc, serving = start_server_line(tmp, "--front-upstream", upstream, "--front-listen", "127.0.0.1:0",
                                      "--front-default-role", "assignee", *flags)
    return proc, f"http://{serving['front_addr']}"


def stop(proc) -> None:
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def message(text: str, task_id: str = "", context_id: str = "") -> dict:
    sent = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if task_id:
        sent["taskId"] = task_id
    if context_id:
        sent["contextId"] = context_id
    return sent


def rpc(url: str, method: str, params: dict, headers: dict | None = None, rpc_id=1) -> dict:
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
    answer = httpx.post(url, json=body, headers={**V1, **(headers or {})}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def send(url: str, text: str, task_id: str = "", context_id: str = "", headers: dict | None = None) -> dict:
    """SendMessage on JSON-RPC: the result's task (or message), or the error."""
    answer = rpc(url, "SendMessage", {"message": message(text, task_id, context_id)}, headers)
    if "error" in answer:
        return answer
    result = answer["result"]
    return result.get("task") or result.get("message")


def text_of(task: dict) -> str:
    return task["status"]["message"]["parts"][0]["text"]


# --- 1. Compression -----------------------------------------------------------------

@pytest.fixture(scope="module")
def gzip_agent():
    running = Agent(gzip=True)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def gzip_front(tmp_path_factory, gzip_agent):
    proc, url = start_front(tmp_path_factory.mktemp("gzip-front"), gzip_agent.url)
    yield url
    stop(proc)


def test_a_compressing_agent_s_answers_are_read_and_commands_never_reach_it(gzip_front, gzip_agent):
    # httpx asks for gzip, as requests, Go, browsers and Java do by default.
    plain = httpx.post(gzip_front, json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                         "params": {"message": message("hello gzip")}},
                       headers=V1, timeout=30)
    # A plain new message passes untouched: the client's Accept-Encoding, the agent's bytes.
    assert plain.headers.get("content-encoding") == "gzip"
    agent_task = plain.json()["result"]["task"]
    # A command on the agent's own task is the front's, never the agent's text.
    before = list(gzip_agent.echo.seen)
    status = send(gzip_front, "/status", agent_task["id"], agent_task["contextId"])
    assert status["id"] == agent_task["id"]
    assert text_of(status).startswith("Task "), status
    assert gzip_agent.echo.seen == before, "the command reached the agent as text"
    # A follow-up to a task the front made comes back under the front's id, every time.
    made = send(gzip_front, "/model gpt-x-mini")
    front_id = made["id"]
    assert front_id.startswith("front-")
    first = send(gzip_front, "next", front_id, made["contextId"])
    assert first["id"] == front_id and text_of(first).startswith("echo: next"), first
    again = send(gzip_front, "again", front_id, made["contextId"])
    assert again["id"] == front_id
    task = rpc(gzip_front, "GetTask", {"id": front_id})["result"]
    history = [m["parts"][0]["text"] for m in task["history"]]
    assert "next" in history and "again" in history, "both follow-ups reached one agent task"
    listed = rpc(gzip_front, "ListTasks", {"contextId": made["contextId"]})["result"]["tasks"]
    assert [t["id"] for t in listed] == [front_id], listed


def test_nginx_with_gzip_on_before_a_go_agent(tmp_path):
    if shutil.which("nginx") is None:
        if os.environ.get("CI"):
            pytest.fail("nginx is missing (.ci/run installs it)")
        pytest.skip("nginx is not installed")
    agent, (agent_url,) = start_agent("go", 1)
    port = free_port()
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"""
master_process off;
daemon off;
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/body;
    proxy_temp_path {tmp_path}/proxy;
    gzip on;
    gzip_proxied any;
    gzip_min_length 1;
    gzip_types application/json application/a2a+json text/event-stream;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass {agent_url.rstrip('/')};
            proxy_http_version 1.1;
            proxy_buffering off;
        }}
    }}
}}
""")
    nginx = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(tmp_path)], stdin=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        probe = httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=30)
        assert probe.headers.get("content-encoding") == "gzip", "nginx compresses"
        proc, url = start_front(tmp_path / "front", f"http://127.0.0.1:{port}")
        try:
            start = send(url, "start")
            status = send(url, "/status", start["id"], start["contextId"])
            assert text_of(status).startswith("Task "), status
            made = send(url, "/model gpt-x-mini")
            follow = send(url, "next", made["id"], made["contextId"])
            assert follow["id"] == made["id"] and follow["contextId"] == made["contextId"], follow
            assert text_of(follow).startswith("echo: next")
            task = rpc(url, "GetTask", {"id": made["id"]})["result"]
            assert task["id"] == made["id"]
            assert task["metadata"]["a2a-commands"]["settings"] == {"model": "gpt-x-mini"}
        finally:
            stop(proc)
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)
        agent.terminate()
        agent.wait(timeout=30)



# --- The raw agent ------------------------------------------------------------------

class RawAgent(RawServer):
    """A minimal A2A agent on a raw socket that records every request (method, path,
    headers, each header line's name, body bytes received) and answers as `mode` says: "echo" (a JSON-RPC
    message), "garbage" (GetTask answered with text that is not JSON), "stall" (a head
    promising 100 bytes, 10 of them, then nothing), "sse-stall" (an event stream with
    one event, then nothing), "early" (413 on a request's head, its body never read)."""

    def __init__(self) -> None:
        self.mode = "echo"
        self.seen: list[dict] = []
        self.release = threading.Event()
        super().__init__()

    def card(self) -> bytes:
        return json.dumps({
            "name": "raw", "description": "raw", "version": "1",
            "supportedInterfaces": [{"url": self.url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": [],
        }).encode()

    def serve(self, conn: socket.socket) -> None:
        with conn:
            reader = conn.makefile("rb")
            while True:
                line = reader.readline()
                if not line:
                    return
                method, path, _ = line.decode().split(" ", 2)
                headers = {}
                names = []
                while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode().partition(":")
                    headers[name.strip().lower()] = value.strip()
                    names.append(name.strip().lower())
                seen = {"method": method, "path": path, "headers": headers, "names": names,
                        "received": 0}
                self.seen.append(seen)
                if self.mode == "early" and not path.endswith("agent-card.json"):
                    # Refused on its head; the body is never read, the connection kept.
                    conn.sendall(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 9\r\n"
                                 b"Connection: close\r\n\r\ntoo large")
                    self.release.wait(60)
                    return
                body = b""
                if "content-length" in headers:
                    body = reader.read(int(headers["content-length"]))
                    seen["received"] = len(body)
                elif headers.get("transfer-encoding") == "chunked":
                    while True:
                        size_line = reader.readline()
                        if not size_line.strip():
                            return  # the front cut the body off
                        size = int(size_line.split(b";")[0], 16)
                        chunk = reader.read(size + 2)[:size]
                        if len(chunk) < size or not chunk and size:
                            return
                        seen["received"] += size
                        body += chunk
                        if size == 0:
                            break
                if not self._answer(conn, method, path, body):
                    return

    def _answer(self, conn: socket.socket, method: str, path: str, body: bytes) -> bool:
        def send(status: str, payload: bytes, kind: str = "application/json") -> None:
            conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n"
                         f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)

        if path.endswith("/.well-known/agent-card.json"):
            send("200 OK", self.card())
            return True
        try:
            call = json.loads(body or b"{}")
        except ValueError:
            call = None
        if not isinstance(call, dict):
            call = {}
        if self.mode == "garbage" and call.get("method") == "GetTask":
            send("200 OK", b"<html>not json</html>", "text/html")
            return True
        if self.mode == "stall":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                         + b"{" * 10)
            self.release.wait(60)
            return False
        if self.mode == "sse-stall":
            event = json.dumps({"jsonrpc": "2.0", "id": call.get("id"), "result": {"task": {
                "id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}}})
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            data = f"data: {event}\n\n".encode()
            conn.sendall(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.release.wait(60)
            return False
        text = "echo"
        if call.get("method") == "SendMessage":
            text = "echo: " + call["params"]["message"]["parts"][0].get("text", "")
        send("200 OK", json.dumps({"jsonrpc": "2.0", "id": call.get("id"), "result": {"message": {
            "messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": text}]}}}).encode())
        return True

    def requests(self, method: str | None = None) -> list[dict]:
        return [s for s in self.seen if not s["path"].endswith("agent-card.json")
                and (method is None or s["method"] == method)]

    def stop(self) -> None:
        self.release.set()
        super().stop()


@pytest.fixture
def raw_agent():
    agent = RawAgent()
    yield agent
    agent.stop()


# --- 2. A command never reaches the agent as text -------------------------------------

def test_a_registered_command_the_front_cannot_run_is_refused_not_forwarded(tmp_path, raw_agent):
    proc, url = start_front(tmp_path, raw_agent.url)
    try:
        raw_agent.mode = "garbage"
        answer = rpc(url, "SendMessage", {"message": message("/model gpt-x", "agent-task-1")}, rpc_id=7)
        assert answer["id"] == 7 and "error" in answer, answer
        assert "/model was not run" in answer["error"]["message"], answer
        assert "could not be read" in answer["error"]["message"]
        # Only the task lookup reached the agent, never the message.
        assert len(raw_agent.requests("POST")) == 1, raw_agent.seen
        # An unregistered name is an ordinary message: it reaches the agent.
        raw_agent.mode = "echo"
        reached = send(url, "/nonsense here", "agent-task-1")
        assert reached["parts"][0]["text"] == "echo: /nonsense here", reached
    finally:
        stop(proc)


# --- 3. One task, one context -------------------------------------------------------

@pytest.fixture(scope="module")
def agent():
    running = Agent()
    yield running
    running.stop()


def test_a_follow_up_without_a_context_keeps_the_front_s_context(tmp_path, agent):
    proc, url = start_front(tmp_path, agent.url)
    try:
        made = send(url, "/model gpt-x-mini")
        context = made["contextId"]
        follow = send(url, "next", made["id"])
        assert follow["id"] == made["id"] and follow["contextId"] == context, follow
        # Naming that context is never refused by the agent.
        named = send(url, "named", made["id"], context)
        assert "error" not in named and named["contextId"] == context, named
        task = rpc(url, "GetTask", {"id": made["id"]})["result"]
        assert task["contextId"] == context
        assert all(m.get("contextId", context) == context for m in task.get("history", [])), task
        listed = rpc(url, "ListTasks", {"contextId": context})["result"]["tasks"]
        assert [t["id"] for t in listed] == [made["id"]]
    finally:
        stop(proc)


# --- 4. Callers kept apart ----------------------------------------------------------

def test_a_caller_never_sees_or_touches_another_s_task(tmp_path, agent):
    proc, url = start_front(tmp_path, agent.url, "--front-sender-header", "x-user")
    alice, bob = {"x-user": "alice"}, {"x-user": "bob"}
    try:
        made = send(url, "/model gpt-x-mini", headers=alice)
        task_id = made["id"]
        unknown = rpc(url, "GetTask", {"id": "front-000000000000000000000000"}, bob)
        assert "error" in unknown
        # Bob gets exactly the answer for an unknown id, on every call.
        got = rpc(url, "GetTask", {"id": task_id}, bob)
        assert got.get("error", {}).get("code") == unknown["error"]["code"], got
        listed = rpc(url, "ListTasks", {}, bob)["result"].get("tasks", [])
        assert task_id not in [t["id"] for t in listed]
        canceled = rpc(url, "CancelTask", {"id": task_id}, bob)
        assert "error" in canceled, canceled
        followed = send(url, "/status", task_id, headers=bob)
        assert "error" in followed or "gpt-x-mini" not in json.dumps(followed), followed
        # Alice's task is as she left it.
        mine = rpc(url, "GetTask", {"id": task_id}, alice)["result"]
        assert mine["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert mine["metadata"]["a2a-commands"]["settings"] == {"model": "gpt-x-mini"}
        assert task_id in [t["id"] for t in rpc(url, "ListTasks", {}, alice)["result"]["tasks"]]
        # Settings on the agent's own task are each caller's own.
        start = send(url, "start", headers=alice)
        send(url, "/effort low", start["id"], start["contextId"], headers=alice)
        theirs = rpc(url, "GetTask", {"id": start["id"]}, bob)["result"]
        assert "a2a-commands" not in theirs.get("metadata", {}), theirs
    finally:
        stop(proc)


def test_callers_with_tokens_of_different_subjects_are_kept_apart(tmp_path, agent):
    from test_front_jwt import AUDIENCE, ISSUER, Keys
    keys = Keys("apart")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keys.jwks()))
    proc, url = start_front(tmp_path / "data", agent.url, "--front-jwt-jwks-file", str(jwks),
                            "--front-jwt-issuer", ISSUER, "--front-jwt-audience", AUDIENCE)
    ada = {"Authorization": f"Bearer {keys.token(sub='ada')}"}
    bea = {"Authorization": f"Bearer {keys.token(sub='bea')}"}
    try:
        made = send(url, "/model gpt-x", headers=ada)
        assert "error" in rpc(url, "GetTask", {"id": made["id"]}, bea)
        assert made["id"] not in [t["id"] for t in rpc(url, "ListTasks", {}, bea)["result"].get("tasks", [])]
        assert rpc(url, "GetTask", {"id": made["id"]}, ada)["result"]["id"] == made["id"]
    finally:
        stop(proc)


# --- 5. Every request within the limits -----------------------------------------------

def test_every_body_counts_against_the_limit(tmp_path, raw_agent):
    limit = 1 << 20
    proc, url = start_front(tmp_path, raw_agent.url, "--front-max-body-bytes", str(limit))
    big = b"x" * (2 << 20)
    try:
        put = httpx.put(f"{url}/anything", content=big, timeout=30)
        assert put.status_code == 413, put.text

        def chunks():
            for start in range(0, len(big), 64 << 10):
                yield big[start:start + (64 << 10)]
        patch = httpx.patch(f"{url}/anything", content=chunks(), timeout=30)
        # Streamed on as it came, it reached the agent in part: the answer says so.
        assert patch.status_code == 413 and "cut short at the limit" in patch.text, patch.text
        assert "nothing was forwarded" in put.text, put.text
        get = httpx.request("GET", f"{url}/tasks/x", content=big, timeout=30)
        assert get.status_code == 413, get.text
        assert raw_agent.requests("PUT") == [] and raw_agent.requests("GET") == []
        assert all(s["received"] <= limit for s in raw_agent.requests("PATCH")), raw_agent.seen
        # Within the limit, the same requests pass.
        assert httpx.put(f"{url}/anything", content=b"x" * 10, timeout=30).status_code == 200
        assert raw_agent.requests("PUT")[0]["received"] == 10
    finally:
        stop(proc)


# --- 6. No hang behind a stalled agent -----------------------------------------------

def test_an_agent_that_stalls_its_body_ends_in_an_error(tmp_path, raw_agent):
    proc, url = start_front(tmp_path, raw_agent.url, "--front-timeout-ms", "1000",
                            "--front-stream-idle-timeout-ms", "1000")
    try:
        raw_agent.mode = "stall"
        # The client's own timeout is only a guard against a hang: the front's bound is
        # a second.
        answer = httpx.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "SendMessage",
                                       "params": {"message": message("hi")}}, headers=V1, timeout=30)
        assert answer.status_code == 504, answer.text
        assert answer.json()["id"] == 3 and "did not answer" in answer.json()["error"]["message"]
        raw_agent.mode = "sse-stall"
        events, broke = [], False
        body = {"jsonrpc": "2.0", "id": 4, "method": "SendStreamingMessage", "params": {"message": message("hi")}}
        try:
            with httpx.stream("POST", url, json=body, headers=V1, timeout=30) as stream:
                for line in stream.iter_lines():
                    if line.startswith("data:"):
                        events.append(json.loads(line[5:]))
        except httpx.HTTPError:
            broke = True
        assert len(events) == 1 and events[0]["result"]["task"]["id"] == "t-1", events
        assert broke, "the stream ended broken off, not as if the agent had finished"
    finally:
        stop(proc)


# --- 7. Proxy details ---------------------------------------------------------------

def test_proxy_connection_is_dropped_and_connect_is_refused(tmp_path, raw_agent):
    proc, url = start_front(tmp_path, raw_agent.url)
    try:
        httpx.put(f"{url}/x", content=b"1", headers={"Proxy-Connection": "keep-alive"}, timeout=30)
        assert "proxy-connection" not in raw_agent.requests("PUT")[0]["headers"]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(b"CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n")
            head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 405"), head
        assert not raw_agent.requests("CONNECT")
    finally:
        stop(proc)


def test_http2_cookie_crumbs_reach_an_http1_agent_as_one_line(tmp_path, raw_agent):
    proc, url = start_front(tmp_path, raw_agent.url)
    try:
        with httpx.Client(http1=False, http2=True, timeout=30) as client:
            answer = client.put(f"{url}/x", content=b"1",
                                headers=[("cookie", "a=1"), ("x-other", "y"), ("cookie", "b=2")])
            assert answer.http_version == "HTTP/2" and answer.status_code == 200, answer
        seen = raw_agent.requests("PUT")[0]
        assert seen["names"].count("cookie") == 1, seen["names"]
        assert seen["headers"]["cookie"] == "a=1; b=2", seen["headers"]
        assert seen["headers"]["x-other"] == "y"
    finally:
        stop(proc)


def test_an_agent_that_refuses_a_body_before_reading_it_is_heard_at_once(tmp_path):
    # A body larger than the sockets' buffers, refused by the agent on its head (as a
    # server with a body limit does): the front must not wait to write the rest, but
    # pass the agent's answer on, as nginx does.
    agent = RawAgent()
    proc, url = start_front(tmp_path, agent.url)
    agent.mode = "early"
    try:
        big_text = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                    "params": {"message": message("x" * 3_900_000)}}
        for path, body in (("/upload", b"x" * 4_000_000), ("/", json.dumps(big_text).encode())):
            answer = httpx.post(f"{url}{path}", content=body, headers={**V1, "content-type": "application/json"},
                                timeout=30)
            assert answer.status_code == 413 and answer.text == "too large", (path, answer.text[:300])
        # The refused connections are not used again: the next request gets a new one.
        agent.mode = "echo"
        after = rpc(url, "SendMessage", {"message": message("after")})["result"]
        assert after["message"]["parts"][0]["text"] == "echo: after", after
    finally:
        agent.release.set()
        stop(proc)


def test_a_request_without_its_one_host_or_for_the_whole_server_is_refused_before_the_agent(tmp_path):
    # RFC 9112, section 3.2: an HTTP/1.1 request with no Host, or two, is answered 400
    # (as nginx answers it), on the front's own loop and on hyper's (a chunked body).
    agent = RawAgent()
    proc, url = start_front(tmp_path, agent.url)
    host, port = url.removeprefix("http://").split(":")
    body = b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}'

    def status_of(head: bytes, chunked: bool = False) -> bytes:
        framing = (b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}".encode() + b"\r\n" + body + b"\r\n0\r\n\r\n"
                   if chunked else b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(head + b"Content-Type: application/json\r\nConnection: close\r\n" + framing)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        return answer.split(b"\r\n", 1)[0]

    try:
        for chunked in (False, True):
            before = len(agent.requests())
            assert status_of(b"POST /x HTTP/1.1\r\n", chunked) == b"HTTP/1.1 400 Bad Request"
            assert status_of(b"POST /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n", chunked) == b"HTTP/1.1 400 Bad Request"
            assert len(agent.requests()) == before, "a malformed request reached the agent"
            assert status_of(b"POST /x HTTP/1.1\r\nHost: a\r\n", chunked) == b"HTTP/1.1 200 OK"
        # HTTP/1.0 needs none.
        assert status_of(b"POST /x HTTP/1.0\r\n").endswith(b" 200 OK")
        # A request about the server as a whole is not the agent's path "/*".
        before = len(agent.requests())
        assert status_of(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n") == b"HTTP/1.1 400 Bad Request"
        assert len(agent.requests()) == before
    finally:
        stop(proc)


def test_a_json_rpc_error_for_an_agent_failure_carries_the_request_s_id(tmp_path, refused_port):
    proc, url = start_front(tmp_path, f"http://127.0.0.1:{refused_port}")
    try:
        for rpc_id in (42, "abc"):
            body = {"jsonrpc": "2.0", "id": rpc_id, "method": "SendMessage",
                    "params": {"message": message("hello")}}
            answer = httpx.post(url, json=body, headers=V1, timeout=30)
            assert answer.status_code == 502
            error = answer.json()
            assert error["id"] == rpc_id and "could not be reached" in error["error"]["message"], error
    finally:
        stop(proc)


def test_a_malformed_grpc_frame_is_named_at_once(tmp_path):
    grpc_agent = Agent(serve_grpc=True)
    proc, url = start_front(tmp_path, grpc_agent.url)
    try:
        with httpx.Client(http1=False, http2=True, timeout=30) as client:
            answer = client.post(f"{url}/lf.a2a.v1.A2AService/SendMessage",
                                 content=b"\x00\x00\x00\x00\x10abc",
                                 headers={"content-type": "application/grpc", "te": "trailers"})
        status = answer.headers.get("grpc-status")
        assert status == "13", (answer.headers, answer.content)
        assert "malformed gRPC frame" in answer.headers.get("grpc-message", "").replace("%20", " ")
    finally:
        stop(proc)
        grpc_agent.stop()


def test_a2a_json_is_accepted_and_answered_in_kind(tmp_path, agent):
    proc, url = start_front(tmp_path, agent.url)
    headers = {**V1, "Content-Type": "application/a2a+json", "Accept": "application/a2a+json"}
    try:
        body = json.dumps({"message": message("/status")})
        answer = httpx.post(f"{url}/rest/message:send", content=body, headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/a2a+json"
        assert text_of(answer.json()["task"]).startswith("Task ")
        plain = httpx.post(f"{url}/rest/message:send", content=json.dumps({"message": message("hi")}),
                           headers=headers, timeout=30)
        assert plain.status_code == 200 and plain.json()["task"]["status"]["message"]["parts"][0]["text"] \
            .startswith("echo: hi"), plain.text
    finally:
        stop(proc)


def test_an_empty_task_data_is_left_out(tmp_path, agent):
    proc, url = start_front(tmp_path, agent.url)
    try:
        made = send(url, "/status")
        assert made["metadata"]["a2a-commands"] == {"subState": "awaiting-next-message"}
        # The awaited message ends the wait: the data is empty now, and left out.
        follow = send(url, "next", made["id"], made["contextId"])
        assert "a2a-commands" not in follow.get("metadata", {}), follow
        task = rpc(url, "GetTask", {"id": made["id"]})["result"]
        assert "a2a-commands" not in task.get("metadata", {}), task
    finally:
        stop(proc)
