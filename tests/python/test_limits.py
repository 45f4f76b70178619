"""Limits seen from outside: what one request or one connection can cost the server
(peak RSS from /proc, against the memory limit of deploy/deployment/deployment.yaml), and
what it answers to framing mistakes and non-gRPC requests, over raw HTTP/2 (python-h2)."""

import pathlib
import re
import socket
import threading
import time

import grpc
import h2.config
import h2.connection
import h2.events
import hpack
import pytest
from hyperframe.frame import HeadersFrame, SettingsFrame

from conftest import ROOT, start_server

CLASSIFY = "/a2a.commands.v1.CommandService/Classify"
REGISTER = "/a2a.commands.v1.CommandService/Register"


def _manifest_limit_bytes():
    """The sidecar container's memory limit in deploy/deployment/deployment.yaml."""
    text = (ROOT / "deploy" / "deployment" / "deployment.yaml").read_text()
    container = text[text.index("- name: a2a-commands"):]
    mib = re.search(r"limits:\s*\n\s*memory:\s*(\d+)Mi", container)
    return int(mib.group(1)) << 20


def _peak_rss(pid):
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmHWM:\s*(\d+) kB", status).group(1)) * 1024


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _classify_bytes(parts):
    """A ClassifyRequest whose message holds `parts` (each part's encoded bytes)."""
    message = b"".join(b"\x2a" + _varint(len(p)) + p for p in parts)
    return b"\x0a" + _varint(len(message)) + message


@pytest.fixture()
def server(tmp_path):
    proc, addr = start_server(tmp_path / "data")
    yield proc, addr
    proc.terminate()
    proc.wait(timeout=30)


def test_requests_of_countless_parts_are_refused_and_memory_stays_bounded(server):
    proc, addr = server
    limit = _manifest_limit_bytes()
    with grpc.insecure_channel(addr, options=[("grpc.max_send_message_length", 8 << 20)]) as channel:
        classify = channel.unary_unary(CLASSIFY)
        # About two million empty parts, and 830,000 one-character ones: 4 MB each.
        floods = [_classify_bytes([b""] * 2_000_000), _classify_bytes([b"\x0a\x01a"] * 830_000)]
        errors = []

        def send(body):
            try:
                classify(body, timeout=60)
            except grpc.RpcError as e:
                errors.append(e)

        threads = [threading.Thread(target=send, args=(floods[i % 2],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(errors) == 8
        # Each is refused by the element limit, or, while the others hold the request
        # memory budget, by the budget: both before anything is decoded.
        for e in errors:
            assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
            assert "--max-request-elements" in e.details() or "--max-request-memory-mib" in e.details()
        assert any("--max-request-elements" in e.details() for e in errors)
        # Within the limit, the same shape is an ordinary message.
        answer = classify(_classify_bytes([b""] * 9_000), timeout=60)
        assert answer.startswith(b"\x12"), answer  # `ordinary` (field 2)
        # Register is decoded before its token is checked: two million empty handler
        # headers are refused the same way, by anyone.
        register = channel.unary_unary(REGISTER)
        headers = b"\x2a\x00" * 2_000_000
        binding = b"\x1a" + _varint(len(headers)) + headers
        with pytest.raises(grpc.RpcError) as refused:
            register(binding, timeout=60)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value
        assert "--max-request-elements" in refused.value.details(), refused.value.details()
    peak = _peak_rss(proc.pid)
    print(f"peak RSS {peak / (1 << 20):.1f} MiB (limit {limit >> 20} MiB)")
    assert peak < limit, f"peak RSS {peak >> 20} MiB over the manifest's {limit >> 20} MiB"


def _settings_preface(sock):
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize())


def test_never_finished_streams_do_not_grow_memory(server):
    proc, addr = server
    limit = _manifest_limit_bytes()
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    received = bytearray()
    done = threading.Event()

    def drain():
        while not done.is_set():
            try:
                chunk = sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            received.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    _settings_preface(sock)
    encoder = hpack.Encoder()
    headers = [
        (":method", "POST"), (":scheme", "http"), (":path", CLASSIFY),
        (":authority", addr), ("content-type", "application/grpc"), ("te", "trailers"),
    ]
    # 20,000 streams opened and never finished, ignoring the advertised limit (a
    # misbehaving client): the server refuses what is over its limit.
    batch = bytearray()
    try:
        for i in range(20_000):
            frame = HeadersFrame(2 * i + 1, encoder.encode(headers), flags=["END_HEADERS"])
            batch += frame.serialize()
            if len(batch) > 64 * 1024:
                sock.sendall(batch)
                batch.clear()
        sock.sendall(batch)
    except OSError:
        pass  # the server may close the connection: that is a bound too
    done.set()
    sock.close()
    reader.join(timeout=10)
    peak = _peak_rss(proc.pid)
    print(f"peak RSS {peak / (1 << 20):.1f} MiB (limit {limit >> 20} MiB)")
    assert peak < limit, f"peak RSS {peak >> 20} MiB over the manifest's {limit >> 20} MiB"
    # The server still serves.
    with grpc.insecure_channel(addr) as channel:
        channel.unary_unary(CLASSIFY)(_classify_bytes([b"\x0a\x01a"]), timeout=10)


class _Raw:
    """One HTTP/2 connection with python-h2, for requests no gRPC library sends."""

    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.addr = addr
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.sock.sendall(self.conn.data_to_send())

    def request(self, method="POST", content_type="application/grpc", data=None):
        """Sends a request (END_STREAM after `data`, or on the headers when None);
        returns (response headers, trailers) as dicts."""
        return self.answer(self.send(method, content_type, data))

    def send(self, method="POST", content_type="application/grpc", data=None, end=True):
        """Starts a request, ended after `data` (or on the headers when None) unless
        `end` is false; returns its stream id."""
        stream = self.conn.get_next_available_stream_id()
        headers = [
            (":method", method), (":scheme", "http"), (":path", CLASSIFY),
            (":authority", self.addr), ("content-type", content_type), ("te", "trailers"),
        ]
        self.conn.send_headers(stream, headers, end_stream=data is None and end)
        if data is not None:
            self.conn.send_data(stream, data, end_stream=end)
        self.sock.sendall(self.conn.data_to_send())
        return stream

    def answer(self, stream):
        """Reads until `stream` ends; returns (response headers, trailers) as dicts."""
        response, trailers = {}, {}
        while True:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed"
            for event in self.conn.receive_data(chunk):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    response = {k.decode(): v.decode() for k, v in event.headers}
                elif isinstance(event, h2.events.TrailersReceived) and event.stream_id == stream:
                    trailers = {k.decode(): v.decode() for k, v in event.headers}
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    self.sock.sendall(self.conn.data_to_send())
                    return response, trailers
            self.sock.sendall(self.conn.data_to_send())


def _status(response, trailers):
    both = {**response, **trailers}
    return int(both["grpc-status"]), both.get("grpc-message", "")


def test_framing_mistakes_are_the_clients(server):
    _, addr = server
    raw = _Raw(addr)
    for data, words in [
        (None, "has no message"),
        (b"", "has no message"),
        (b"\x00\x00\x00", "ends inside a message"),
        (b"\x00\x00\x00\x00\x09\x0a", "ends inside a message"),
    ]:
        response, trailers = raw.request(data=data)
        assert response[":status"] == "200"
        code, message = _status(response, trailers)
        assert code == grpc.StatusCode.INVALID_ARGUMENT.value[0], (data, code, message)
        assert words in message.replace("%20", " "), (data, message)


def test_non_grpc_requests_get_http_answers(server):
    _, addr = server
    raw = _Raw(addr)
    response, _ = raw.request(method="GET")
    assert response[":status"] == "405"
    assert response["allow"] == "POST"
    response, _ = raw.request(content_type="application/json", data=b"{}")
    assert response[":status"] == "415"
    # The connection still serves gRPC afterwards.
    body = _classify_bytes([b"\x0a\x01a"])
    response, trailers = raw.request(data=b"\x00" + len(body).to_bytes(4, "big") + body)
    assert _status(response, trailers)[0] == 0


def test_a_request_that_never_finishes_gives_its_memory_back(tmp_path):
    # The budget holds exactly one largest request, and a message has 3 s to arrive.
    proc, addr = start_server(tmp_path / "data", "--max-request-memory-mib", "1",
                              "--request-read-timeout-seconds", "3")
    try:
        raw = _Raw(addr)
        with grpc.insecure_channel(addr) as channel:
            classify = channel.unary_unary(CLASSIFY)
            small = _classify_bytes([b"\x0a\x01a"])
            # Connected and served first, so that the 3 s below are all the calls'.
            assert classify(small, timeout=10).startswith(b"\x12")
            # A message announced as 4 MiB, of which a few bytes come, and never the rest.
            stalled = raw.send(data=b"\x00" + (4 << 20).to_bytes(4, "big") + b"\x0a\x00", end=False)
            # While it holds the budget, other calls are refused at once...
            # Its frames travel on another connection: call until they have arrived
            # (the bound only stops a hang).
            held = False
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    classify(small, timeout=10)
                except grpc.RpcError as e:
                    assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
                    held = True
                    break
            assert held, "the unfinished request never took the budget"
            # ...until its time is up: it ends DEADLINE_EXCEEDED and gives the budget back.
            response, trailers = raw.answer(stalled)
            code, message = _status(response, trailers)
            assert code == grpc.StatusCode.DEADLINE_EXCEEDED.value[0], (code, message)
            assert "--request-read-timeout-seconds" in message.replace("%20", " "), message
            assert classify(small, timeout=10).startswith(b"\x12")  # ordinary, served
        raw.sock.close()  # so that the server's drain does not wait for it
    finally:
        proc.terminate()
        proc.wait(timeout=30)
