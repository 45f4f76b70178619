"""One `a2a-commands serve` process: started on 127.0.0.1:0, its JSON log read as it
comes, readiness taken from its "serving" line, and a SIGKILL at any moment."""

import json
import os
import pathlib
import queue
import subprocess
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]

START_TIMEOUT = 60.0  # a bound against a hang; readiness is the "serving" line
def binary():
    """The server binary: A2A_COMMANDS_BIN, else target/debug (as tests/python/conftest.py)."""
    path = os.environ.get("A2A_COMMANDS_BIN") or str(ROOT / "target" / "debug" / "a2a-commands")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(f"{path} is missing: run cargo build first")
    return path


class StartRefused(Exception):
    """The process exited before serving; the message holds its stderr."""


class Service:
    """A running (or killed) server; `lines` holds every log line read so far."""

    def __init__(self, data_dir, *extra):
        self.data_dir = str(data_dir)
        self.spawned_at = time.monotonic()
        self.lines = []
        self.events = []
        self._queue: "queue.Queue[dict | None]" = queue.Queue()
        self._lock = threading.Lock()
        self.serving = None
        args = [binary(), "serve", "--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0",
                "--log-format", "json", "--data-dir", self.data_dir, *extra]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self):
        for line in self.proc.stderr:
            try:
                event = json.loads(line)
            except ValueError:
                event = {"message": None, "raw": line}
            with self._lock:
                self.lines.append(line.rstrip("\n"))
                self.events.append(event)
            self._queue.put(event)
        self._queue.put(None)

    @property
    def addr(self):
        """The API's address, from the "serving" line."""
        return self.serving["addr"]

    def wait_for(self, message, timeout=START_TIMEOUT):
        """The next log event whose message is `message`; StartRefused if the process
        ends first, TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {message!r} line within {timeout:.0f} s; log:\n"
                                   + self.log_text())
            try:
                event = self._queue.get(timeout=left)
            except queue.Empty:
                continue
            if event is None:
                self._queue.put(None)  # later waits see the end too
                code = self.proc.wait(timeout=30)
                raise StartRefused(f"exited with {code} before {message!r}:\n" + self.log_text())
            if event.get("message") == message:
                return event

    def wait_serving(self, timeout=START_TIMEOUT):
        """Waits for the "serving" line; returns seconds since spawn."""
        self.serving = self.wait_for("serving", timeout)
        return time.monotonic() - self.spawned_at

    def kill(self):
        """SIGKILL, reap, and read the log to its end."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=30)
        self._pump.join(timeout=30)

    def saw(self, message):
        """The log events with this message read so far."""
        with self._lock:
            return [e for e in self.events if e.get("message") == message]

    def log_text(self, last=30):
        """The last log lines, for failure messages."""
        with self._lock:
            return "\n".join(self.lines[-last:]) or "<no output>"
