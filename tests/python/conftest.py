"""Fixtures: Python stubs generated from proto/, and the real server binary."""

import contextlib
import json
import os
import pathlib
import queue
import socket
import subprocess
import threading
import time

import grpc
import pytest

from ports import free_port  # noqa: F401 (the tests import it from here)

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def stubs(tmp_path_factory):
    """Generates Python code for our protos (with grpc_tools' own protoc)."""
    import grpc_tools
    from grpc_tools import protoc

    out = str(tmp_path_factory.mktemp("stubs"))
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = [
        "protoc",
        f"-I{ROOT / 'proto'}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        "a2a/commands/v1/a2a.proto",
        "a2a/commands/v1/commands.proto",
    ]
    assert protoc.main(args) == 0, "protoc failed"
    # a2a-sdk owns the top-level `a2a` package, so our `a2a.commands.v1` modules are
    # added to its search path rather than shadowing it (see README, "Python").
    import a2a

    a2a.__path__.append(os.path.join(out, "a2a"))
    from a2a.commands.v1 import a2a_pb2, commands_pb2, commands_pb2_grpc  # noqa: E402

    return a2a_pb2, commands_pb2, commands_pb2_grpc


def _binary():
    path = os.environ.get("A2A_COMMANDS_BIN") or str(ROOT / "target" / "debug" / "a2a-commands")
    assert os.path.exists(path), f"{path} is missing: run cargo build first"
    return path


def start_server(data_dir, *extra):
    """Starts `a2a-commands serve` on 127.0.0.1:0 with `extra` flags and waits for its
    "serving" line; returns the process and the API's address."""
    proc, serving = start_server_line(data_dir, *extra)
    return proc, serving["addr"]


def health_status(addr: str, service: str) -> int:
    """grpc.health.v1.Health/Check for `service`, as raw protobuf (field 1: the name;
    the answer's field 1: the status, 1 SERVING, 2 NOT_SERVING)."""
    name = service.encode()
    with grpc.insecure_channel(addr) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        answer = check(b"\x0a" + bytes([len(name)]) + name, timeout=10)
    return answer[1] if len(answer) >= 2 and answer[0] == 0x08 else 0


def start_server_line(data_dir, *extra):
    """As start_server, but returns the process and the whole "serving" log event (its
    `addr`, `health_addr`, `metrics_addr`)."""
    proc = subprocess.Popen(
        [_binary(), "serve", "--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0",
         "--log-format", "json", "--data-dir", str(data_dir), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: "queue.Queue[str | None]" = queue.Queue()

    def pump():
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen = []
    while True:
        line = lines.get(timeout=60)  # a bound against a hang; readiness is the line itself
        if line is None:
            raise RuntimeError(f"server exited before serving: {seen}")
        seen.append(line)
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("message") == "serving":
            return proc, event


@pytest.fixture(scope="session")
def server_addr(tmp_path_factory):
    """A server shared by the tests of a session."""
    proc, addr = start_server(tmp_path_factory.mktemp("data"))
    yield addr
    proc.terminate()
    assert proc.wait(timeout=30) == 0


@pytest.fixture()
def client(stubs, server_addr):
    _, _, commands_pb2_grpc = stubs
    with grpc.insecure_channel(server_addr) as channel:
        yield commands_pb2_grpc.CommandServiceStub(channel)


@pytest.fixture()
def refused_port():
    """A port on 127.0.0.1 that refuses every connection for the whole test: bound,
    never listened on, so that no other process (a sidecar binding port 0) can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@contextlib.contextmanager
def serving_asgi(app):
    """Serves the ASGI `app` (an MCP server's, say) with uvicorn on 127.0.0.1 at a port of
    its own, in a thread; yields its base URL and stops it after."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:  # readiness: uvicorn's own flag
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class Receiver:
    """The test OTLP receiver (`a2a-commands-otlp-receiver`, beside the binary): it prints
    each span it is sent as a JSON line, read here into `spans`."""

    def __init__(self):
        path = os.path.join(os.path.dirname(_binary()), "a2a-commands-otlp-receiver")
        assert os.path.exists(path), f"{path} is missing: run cargo build first"
        self.proc = subprocess.Popen([path], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        self.addr = json.loads(self.proc.stdout.readline())["listening"]
        self.spans = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self._arrived:
                self.spans.append(json.loads(line))
                self._arrived.notify_all()

    @property
    def endpoint(self):
        return f"http://{self.addr}"

    def wait_for(self, what, done, timeout=30):
        """The spans once `done(spans)` holds (waiting on arrivals, at most `timeout` s)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: done(self.spans), timeout=timeout):
                raise AssertionError(f"{what}: not received; got {[s['name'] for s in self.spans]}")
            return list(self.spans)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture()
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.stop()
