"""README.md's two quick starts, run as written: "Quick start: the front" (a plain
a2a-sdk agent with the sidecar in front of it) and "Quick start: a gateway with a kit".

Each section's fenced blocks are found by the HTML comment before each one,
``<!-- quickstart:KIND -->``:

- ``build``: the ``cargo build --release`` of step 1. It is the one block not run:
  scripts/test.sh has built the binary already (A2A_COMMANDS_BIN), and a symlink at
  ``./target/release/a2a-commands`` stands in for the release build.
- ``background``: a process that keeps running (the agent, the sidecar, the gateway);
  started, then waited for by what the README says it prints when ready.
- ``run``: a command that finishes (an install, the client); it must succeed.
- ``output``: what the ``run`` block before it prints; ``<task id>`` stands for a UUID.

The blocks run in order, each in bash, in a temporary directory that looks like the
checkout (``clients`` and ``examples`` link to the real ones), so the virtual environment
and the data directory the steps make land there. The text is never changed: free ports
reach the blocks only through variables the README names (A2A_COMMANDS_LISTEN,
A2A_COMMANDS_HEALTH_LISTEN, A2A_COMMANDS_ADDR, PORT, FRONT_ADDR). The install steps
build a fresh virtual environment as a newcomer's would, so these tests need network
access to PyPI (or a warm pip cache) and take about half a minute each.
"""

from __future__ import annotations

import os
import pathlib
import queue
import re
import signal
import subprocess
import textwrap
import threading
import time

import pytest

from conftest import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

# Bounds against a hang only; readiness is always a line the process prints.
READY_TIMEOUT = 60
INSTALL_TIMEOUT = 600
# The marked block: the marker, then a fence at the same indentation (inside a list item).
BLOCK = re.compile(r"^( *)<!-- quickstart:(\w+) -->\n\1```[^\n]*\n(.*?)^\1```[ \t]*$", re.M | re.S)


# The quick starts' headings, the front's first (README.md leads with it).
FRONT = "Quick start: the front"
KIT = "Quick start: a gateway with a kit"


def test_the_front_s_quick_start_comes_first() -> None:
    headings = re.findall(r"^## (Quick start.*)$", README.read_text(), re.M)
    assert headings == [FRONT, KIT]


def quickstart_blocks(heading: str) -> list[tuple[str, str]]:
    """The (kind, text) of each fenced block of README.md's "## <heading>", in order."""
    text = README.read_text()
    marker = f"\n## {heading}\n"
    assert marker in text, f"README.md has no {heading!r} section"
    section = text.split(marker, 1)[1].split("\n## ", 1)[0]
    blocks = [(kind, textwrap.dedent(body)) for _, kind, body in BLOCK.findall(section)]
    fences = len(re.findall(r"^ *```", section, re.M)) // 2
    assert len(blocks) == fences, f"every block of {heading!r} needs a <!-- quickstart:KIND --> marker"
    return blocks


def checkout(tmp_path: pathlib.Path) -> None:
    """``tmp_path`` as the steps see the checkout. The binary is the one scripts/test.sh
    built (A2A_COMMANDS_BIN), where step 1's release build would have put it."""
    binary = pathlib.Path(os.environ.get("A2A_COMMANDS_BIN") or ROOT / "target" / "debug" / "a2a-commands")
    assert binary.exists(), f"{binary} is missing: build it, or point A2A_COMMANDS_BIN at it"
    (tmp_path / "clients").symlink_to(ROOT / "clients")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "target" / "release").mkdir(parents=True)
    (tmp_path / "target" / "release" / "a2a-commands").symlink_to(binary.resolve())


def fresh_terminal() -> dict[str, str]:
    """The environment of a fresh terminal: none of the variables the README names is
    inherited from whoever runs the tests (a RUST_LOG=warn would hide the ready line).
    The sidecar's API picks a free port of its own (port 0) and says which; its health
    listener (0.0.0.0:50052 by default) is not needed here."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("A2A_COMMANDS_") and k not in {"RUST_LOG", "PORT", "FRONT_ADDR", "VIRTUAL_ENV"}}
    env["A2A_COMMANDS_LISTEN"] = "127.0.0.1:0"
    env["A2A_COMMANDS_HEALTH_LISTEN"] = "off"
    return env


class Background:
    """A ``background`` block running in bash, in its own session so that stopping it
    reaches every process it started; its output (stdout and stderr) is collected."""

    def __init__(self, script: str, cwd: pathlib.Path, env: dict[str, str]) -> None:
        self.script = script
        self.proc = subprocess.Popen(
            ["bash", "-c", script], cwd=cwd, env=env, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: str) -> re.Match[str]:
        """Waits for an output line matching ``pattern``; fails, with the output so far,
        if the process ends first or nothing matches within READY_TIMEOUT."""
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                pytest.fail(f"no line matching {pattern!r} from {self.script!r}:\n{''.join(self.seen)}")
            if line is None:
                pytest.fail(f"{self.script!r} exited ({self.proc.wait()}) before {pattern!r}:\n{''.join(self.seen)}")
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def stop(self) -> None:
        """SIGTERM to the whole session (as Ctrl-C would stop it), SIGKILL if it lingers."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:  # it ended meanwhile
                self.proc.wait()


def run(script: str, cwd: pathlib.Path, env: dict[str, str], timeout: float) -> str:
    """Runs a ``run`` block in bash (``-e``: any failing line fails it) and returns its
    stdout; on failure or timeout, every process it started is killed and the test fails."""
    proc = subprocess.Popen(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, start_new_session=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{script!r} took over {timeout} s:\n{out}{err}")
    finally:
        if proc.poll() is None:  # an interrupt (Ctrl-C of pytest) in communicate
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, f"{script!r} failed ({proc.returncode}):\n{out}{err}"
    return out


UUID = r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}"


def output_pattern(expected: str) -> str:
    """The ``output`` block as a regular expression: literal, but ``<task id>`` is a UUID."""
    return re.escape(expected).replace(re.escape("<task id>"), UUID)


def test_the_front_s_quickstart_runs_as_written(tmp_path: pathlib.Path) -> None:
    blocks = quickstart_blocks(FRONT)
    assert [kind for kind, _ in blocks] == ["build", "run", "background", "background", "run", "output"]
    build, install, agent_block, sidecar_block, client, expected = (text for _, text in blocks)
    assert build == "cargo build --release\n"  # nothing else may be skipped
    checkout(tmp_path)
    env = fresh_terminal()

    started: list[Background] = []
    try:
        # Step 2: a2a-sdk and uvicorn, into a fresh virtual environment.
        run(install, tmp_path, env, INSTALL_TIMEOUT)

        # Step 3: the plain agent, ready once uvicorn says it is listening on $PORT.
        env["PORT"] = port = str(free_port())
        started.append(Background(agent_block, tmp_path, env))
        started[-1].wait_for(rf"Uvicorn running on http://127\.0\.0\.1:{port}\b")

        # Step 4: the sidecar in front of it (the agent's $PORT), the front on a port of
        # its own choosing (FRONT_ADDR, port 0), ready at its "serving ... front_addr=..."
        # line, which names the port; the client finds the front there.
        env["FRONT_ADDR"] = "127.0.0.1:0"
        started.append(Background(sidecar_block, tmp_path, env))
        ready = started[-1].wait_for(r"\bserving addr=127\.0\.0\.1:\d+ .*\bfront_addr=(127\.0\.0\.1:\d+)\s")
        assert f"front_upstream=http://127.0.0.1:{port}/" in ready.string, ready.string
        env["FRONT_ADDR"] = ready.group(1)
        assert (tmp_path / "front-data").is_dir()

        # Step 5: the client's output is the README's, task id and trailing spaces aside
        # (the empty task name leaves one after "·", which editors strip).
        out = run(client, tmp_path, env, READY_TIMEOUT)
        printed = "".join(line.rstrip() + "\n" for line in out.splitlines())
        shown = "".join(line.rstrip() + "\n" for line in expected.splitlines())
        assert re.fullmatch(output_pattern(shown), printed), f"the client printed:\n{out}\nthe README shows:\n{expected}"
        # What the README's output claims, said outright: the plain messages reached the
        # echo agent, and the commands were answered by the front in the reference's
        # form, /status on the agent's task (a UUID: not a task the front made).
        replies = dict(re.findall(r"^> (.*)\n((?:(?!> ).*\n)*)", out, re.M))
        assert replies["hello"] == "echo: hello\n" and replies["hello again"] == "echo: hello again\n"
        status = rf"Task {UUID} · \nState: INPUT_REQUIRED\nModel: gpt-x \(default\)\n"
        assert re.match(status, replies["/status"]), replies["/status"]
        assert replies["/model gpt-x-mini"] == "Model set to gpt-x-mini.\n"
    finally:
        for process in reversed(started):  # the sidecar first, then the agent behind it
            process.stop()


def test_the_kit_s_quickstart_runs_as_written(tmp_path: pathlib.Path) -> None:
    blocks = quickstart_blocks(KIT)
    assert [kind for kind, _ in blocks] == ["build", "background", "run", "background", "run", "output"]
    build, sidecar_block, install, gateway_block, client, expected = (text for _, text in blocks)
    assert build == "cargo build --release\n"  # nothing else may be skipped
    checkout(tmp_path)
    env = fresh_terminal()

    started: list[Background] = []
    try:
        # Step 1: the sidecar, ready at its "serving addr=..." line (as the README says).
        started.append(Background(sidecar_block, tmp_path, env))
        addr = started[-1].wait_for(r"\bserving addr=(127\.0\.0\.1:\d+)\s").group(1)
        env["A2A_COMMANDS_ADDR"] = f"http://{addr}"
        assert (tmp_path / "quickstart-data").is_dir()

        # Step 2: the kit, into a fresh virtual environment.
        run(install, tmp_path, env, INSTALL_TIMEOUT)

        # Step 3: the gateway, ready once uvicorn says it is listening on $PORT.
        env["PORT"] = port = str(free_port())
        started.append(Background(gateway_block, tmp_path, env))
        started[-1].wait_for(rf"Uvicorn running on http://127\.0\.0\.1:{port}\b")

        # Step 4: the client's output is the README's, task id aside.
        out = run(client, tmp_path, env, READY_TIMEOUT)
        assert re.fullmatch(output_pattern(expected), out), f"the client printed:\n{out}\nthe README shows:\n{expected}"
        # What the README's output claims, said outright: the plain message reached the
        # echo agent, and /status was answered by the sidecar in the reference's form.
        hello, status = out.split("> /status\n")
        assert hello == "> hello\necho: hello\n"
        assert re.match(r"Task [0-9a-f-]{36} · echo\nState: INPUT_REQUIRED\nModel: ", status), status
    finally:
        for process in reversed(started):  # the gateway first, then the sidecar it uses
            process.stop()
