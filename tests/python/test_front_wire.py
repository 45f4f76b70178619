"""The front's HTTP/1.1 on raw sockets (issue 50): its own loop for clients and its own
client of the agent. What a client and an agent see must be what they saw when hyper
served both ends: pipelined requests answered in order, unusual requests (HTTP/1.0,
chunked uploads, 100-continue, HEAD, bad or oversized heads) answered as hyper answers
them, a client that leaves ending the agent's exchange, and every framing an agent may
answer in (chunks with extensions and trailers, a body to the close, `Connection:
close`, an interim 100) passed on whole."""

from __future__ import annotations

import json
import signal
import socket
import threading

import pytest

from test_front_http import RawAgent, message, start_front, stop

V1 = "A2A-Version: 1.0\r\n"


def send_message_bytes(text: str, rpc_id: int = 1, method: str = "SendMessage") -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method,
                       "params": {"message": message(text)}}).encode()
    return (f"POST / HTTP/1.1\r\nHost: front\r\nContent-Type: application/json\r\n{V1}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def read_answer(reader, head_only: bool = False) -> tuple[str, dict, bytes]:
    """One answer from a buffered socket reader: its status line, headers (lower-case
    names), and body (by Content-Length, chunks, or to the close)."""
    status = reader.readline().decode().rstrip("\r\n")
    assert status, "the connection closed before an answer"
    headers: dict[str, str] = {}
    while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    if head_only or status.split()[1] in ("100", "204", "304"):
        return status, headers, b""
    if "content-length" in headers:
        return status, headers, reader.read(int(headers["content-length"]))
    if headers.get("transfer-encoding") == "chunked":
        body = b""
        while True:
            size = int(reader.readline().split(b";")[0], 16)
            if size == 0:
                while reader.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return status, headers, body
            body += reader.read(size)
            assert reader.read(2) == b"\r\n"
    return status, headers, reader.read()


def connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


class FramingAgent(RawAgent):
    """The raw agent, with answers in the framings no SDK picks on purpose: "chunked"
    (pieces with a chunk extension and a trailer), "large" (the same, 300 KB), "to-close" (no length: the body
    runs to the close), "close" (a length and `Connection: close`), "interim" (a 100
    Continue first), and "sse-watch" (one event, then it waits to see the front close
    the connection, and says so in `closed`), "cut" (a chunk begun, then the close),
    "both" (chunks, and a `Content-Length` that is not the body's)."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = threading.Event()

    def _answer(self, conn, method, path, body):
        if path.endswith("/.well-known/agent-card.json") or self.mode == "echo":
            return super()._answer(conn, method, path, body)
        call = json.loads(body or b"{}")
        answer = {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"text": "framed " + self.mode}]}
        if self.mode == "large":
            # Larger than any one read or write of the front's: it streams through.
            answer["metadata"] = {"pad": "x" * 300_000}
        payload = json.dumps({"jsonrpc": "2.0", "id": call.get("id"), "result": {"message": answer}}).encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        if self.mode == "both":
            # Chunks and a length that is not the body's: the chunks are the framing.
            conn.sendall(head + b"Transfer-Encoding: chunked\r\nContent-Length: 20000\r\n\r\n"
                         + f"{len(payload):x}\r\n".encode() + payload + b"\r\n0\r\n\r\n")
            return True
        if self.mode in ("chunked", "large"):
            half = len(payload) // 2
            conn.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n"
                         + f"{half:x};piece=1\r\n".encode() + payload[:half] + b"\r\n")
            conn.sendall(f"{len(payload) - half:X}\r\n".encode() + payload[half:] + b"\r\n"
                         + b"0\r\nX-Trailer: 1\r\n\r\n")
            return True
        if self.mode == "to-close":
            conn.sendall(head + b"\r\n" + payload)
            return False
        if self.mode == "close":
            conn.sendall(head + f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode() + payload)
            return False
        if self.mode == "interim":
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" + head
                         + f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
            return True
        if self.mode == "cut":
            # One write, then the close: the front reads the part and the end together.
            conn.sendall(head + b"Transfer-Encoding: chunked\r\n\r\n"
                         + f"{len(payload):x}\r\n".encode() + payload[:10])
            return False
        if self.mode == "sse-watch":
            event = json.dumps({"jsonrpc": "2.0", "id": call.get("id"), "result": {"task": {
                "id": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_WORKING"}}}})
            data = f"data: {event}\n\n".encode()
            conn.sendall(head.replace(b"application/json", b"text/event-stream")
                         + b"Transfer-Encoding: chunked\r\n\r\n"
                         + f"{len(data):x}\r\n".encode() + data + b"\r\n")
            conn.settimeout(60)
            try:
                if conn.recv(1) == b"":
                    self.closed.set()
            except OSError:
                self.closed.set()
            return False
        raise AssertionError(f"unknown mode {self.mode}")


@pytest.fixture
def agent():
    running = FramingAgent()
    yield running
    running.stop()


@pytest.fixture
def front(tmp_path, agent):
    proc, url = start_front(tmp_path, agent.url)
    yield url
    stop(proc)


def test_pipelined_requests_are_answered_in_order_on_one_connection(front, agent):
    with connect(front) as sock:
        sock.sendall(b"".join(send_message_bytes(f"n{i}", rpc_id=i) for i in range(3)))
        reader = sock.makefile("rb")
        for i in range(3):
            status, headers, body = read_answer(reader)
            assert status == "HTTP/1.1 200 OK", status
            assert "date" in headers and headers["content-length"] == str(len(body))
            answer = json.loads(body)
            assert answer["id"] == i and answer["result"]["message"]["parts"][0]["text"] == f"echo: n{i}"
    assert len(agent.requests("POST")) == 3


def test_a_request_read_before_the_client_closes_its_side_is_answered(front, agent):
    with connect(front) as sock:
        # A stray CRLF after the first body, as some clients send, is no request. The
        # first request is answered though the client's end is already there behind the
        # second; the second, in flight when that end is seen, is dropped, as hyper
        # drops it (a client that closed its side is taken to be gone).
        sock.sendall(send_message_bytes("a", rpc_id=1) + b"\r\n" + send_message_bytes("b", rpc_id=2))
        sock.shutdown(socket.SHUT_WR)
        reader = sock.makefile("rb")
        status, _, body = read_answer(reader)
        assert status == "HTTP/1.1 200 OK", status
        assert json.loads(body)["id"] == 1


def test_unusual_requests_get_hyper_s_answers(front, agent):
    # HTTP/1.0: answered in HTTP/1.0 and closed.
    with connect(front) as sock:
        sock.sendall(send_message_bytes("old").replace(b"HTTP/1.1", b"HTTP/1.0", 1))
        status, _, body = read_answer(sock.makefile("rb"))
        assert status.startswith("HTTP/1.0 200"), status
        assert json.loads(body)["result"]["message"]["parts"][0]["text"] == "echo: old"
    # A chunked upload reaches the agent whole; then 100-continue on the same connection.
    with connect(front) as sock:
        reader = sock.makefile("rb")
        plain = send_message_bytes("chunked")
        head, body = plain.split(b"\r\n\r\n", 1)
        head = head.replace(f"Content-Length: {len(body)}".encode(), b"Transfer-Encoding: chunked")
        sock.sendall(head + b"\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
        status, _, body = read_answer(reader)
        assert status == "HTTP/1.1 200 OK" and b"echo: chunked" in body, (status, body)
        plain = send_message_bytes("continue")
        head, body = plain.split(b"\r\n\r\n", 1)
        sock.sendall(head + b"\r\nExpect: 100-continue\r\n\r\n")
        status, _, _ = read_answer(reader)
        assert status == "HTTP/1.1 100 Continue", status
        sock.sendall(body)
        status, _, body = read_answer(reader)
        assert status == "HTTP/1.1 200 OK" and b"echo: continue" in body, (status, body)
    # Content-Length twice, agreeing: taken; the agent gets it once (some agents refuse
    # a request that repeats it). The same over HTTP/2 below.
    with connect(front) as sock:
        plain = send_message_bytes("twice")
        head, body = plain.split(b"\r\n\r\n", 1)
        sock.sendall(head + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        status, _, answer = read_answer(sock.makefile("rb"))
        assert status == "HTTP/1.1 200 OK" and b"echo: twice" in answer, (status, answer)
    assert agent.seen[-1]["names"].count("content-length") == 1, agent.seen[-1]
    # HEAD: a head and no body.
    with connect(front) as sock:
        sock.sendall(b"HEAD /.well-known/agent-card.json HTTP/1.1\r\nHost: front\r\n\r\n")
        status, headers, _ = read_answer(sock.makefile("rb"), head_only=True)
        assert status.startswith("HTTP/1.1 "), status
    # A head that does not parse, and one too large.
    for bad, code in ((b"GET /\x01 HTTP/1.1\r\n\r\n", "400"),
                      (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", "431")):
        with connect(front) as sock:
            sock.sendall(bad)
            status, _, _ = read_answer(sock.makefile("rb"))
            assert status.split()[1] == code, status


@pytest.mark.parametrize("mode", ["chunked", "large", "both", "to-close", "close", "interim"])
def test_every_framing_an_agent_answers_in_is_passed_on_whole(front, agent, mode):
    agent.mode = mode
    with connect(front) as sock:
        reader = sock.makefile("rb")
        for i in range(2):
            # Twice: a connection the agent closed after its answer is not used again.
            sock.sendall(send_message_bytes(f"x{i}", rpc_id=i))
            status, _, body = read_answer(reader)
            assert status == "HTTP/1.1 200 OK", status
            answer = json.loads(body)
            assert answer["id"] == i and answer["result"]["message"]["parts"][0]["text"] == f"framed {mode}"


def test_an_answer_cut_off_by_the_agent_is_passed_on_as_far_as_it_came(front, agent):
    agent.mode = "cut"
    with connect(front) as sock:
        sock.sendall(send_message_bytes("cut"))
        reader = sock.makefile("rb")
        status, headers, _ = read_answer(reader, head_only=True)
        assert status == "HTTP/1.1 200 OK", status
        assert headers.get("transfer-encoding") == "chunked", headers
        rest = reader.read()
        # What came before the cut, and then the close: never the last chunk.
        assert rest.startswith(b"a\r\n") and not rest.endswith(b"0\r\n\r\n"), rest


def test_a_client_that_leaves_a_stream_ends_the_agent_s_exchange(front, agent):
    agent.mode = "sse-watch"
    sock = connect(front)
    sock.sendall(send_message_bytes("watch", method="SendStreamingMessage"))
    reader = sock.makefile("rb")
    assert reader.readline().startswith(b"HTTP/1.1 200")
    while b"data:" not in reader.readline():
        pass
    reader.close()
    sock.close()
    assert agent.closed.wait(30), "the agent's connection stayed open after the client left"


def test_the_drain_closes_an_idle_connection_and_the_server_exits(tmp_path, agent):
    proc, url = start_front(tmp_path, agent.url)
    with connect(url) as sock:
        reader = sock.makefile("rb")
        sock.sendall(send_message_bytes("before"))
        status, _, _ = read_answer(reader)
        assert status == "HTTP/1.1 200 OK"
        proc.send_signal(signal.SIGTERM)
        assert reader.read() == b"", "the idle connection was closed by the drain"
    assert proc.wait(timeout=30) == 0


def test_a_content_length_repeated_over_http2_reaches_the_agent_once(front, agent):
    # h2 takes repeated `content-length` fields that agree and keeps them all; the front
    # forwards one.
    import h2.config
    import h2.connection
    import h2.events

    body = send_message_bytes("h2 twice").split(b"\r\n\r\n", 1)[1]
    with connect(front) as sock:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        authority = front.removeprefix("http://")
        conn.send_headers(1, [
            (":method", "POST"), (":scheme", "http"), (":path", "/"), (":authority", authority),
            ("content-type", "application/json"), ("a2a-version", "1.0"),
            ("content-length", str(len(body))), ("content-length", str(len(body))),
        ])
        conn.send_data(1, body, end_stream=True)
        sock.sendall(conn.data_to_send())
        status, answer, ended = None, b"", False
        while not ended:
            data = sock.recv(65536)
            assert data, "the connection closed before the answer ended"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = dict(event.headers)[b":status"]
                elif isinstance(event, h2.events.DataReceived):
                    answer += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, 1)
                elif isinstance(event, h2.events.StreamEnded):
                    ended = True
            sock.sendall(conn.data_to_send())
    assert status == b"200" and b"echo: h2 twice" in answer, (status, answer)
    assert agent.seen[-1]["names"].count("content-length") == 1, agent.seen[-1]
