"""The test side of the filesystem daemon: start it, wait for its mount, cut the power,
and always leave no mount and no process behind."""

import json
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent

# Bounds on every wait, generous for a loaded two-core machine: a hang fails.
MOUNT_TIMEOUT = 30.0
UNMOUNT_TIMEOUT = 30.0


class FuseUnavailable(Exception):
    """FUSE cannot be used here; the message says why."""


def fuse_unavailable_reason():
    """None when FUSE looks usable (device, library, bindings, umount), else why not."""
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
    except OSError as e:
        return f"/dev/fuse cannot be opened: {e}"
    os.close(fd)
    if shutil.which("umount") is None:
        return "there is no umount binary to take mounts down"
    try:
        import mfusepy  # noqa: F401
    except ImportError as e:
        return f"mfusepy is not installed (pip install -r tests/python/requirements.txt): {e}"
    except OSError as e:
        return f"libfuse3 cannot be loaded (apt-get install libfuse3-3): {e}"
    return None


def mounted_at(mountpoint):
    """Whether /proc/self/mountinfo lists a mount at `mountpoint` (also a dead FUSE
    mount, which os.path.ismount cannot stat)."""
    target = os.path.realpath(mountpoint)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            # Field 5 is the mount point, with spaces and such escaped as octal.
            point = fields[4].encode().decode("unicode_escape")
            if point == target:
                return True
    return False


def _wait_until(condition, timeout, what):
    deadline = time.monotonic() + timeout
    delay = 0.001
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(delay)  # polling a condition, bounded; not a fixed wait
        delay = min(delay * 2, 0.05)


def unmount(mountpoint, timeout=UNMOUNT_TIMEOUT):
    """Unmounts, retrying while busy, and lazily as a last resort; returns once
    /proc/self/mountinfo no longer lists it."""
    if not mounted_at(mountpoint):
        return
    deadline = time.monotonic() + timeout / 2
    while True:
        done = subprocess.run(["umount", mountpoint], capture_output=True, text=True)
        if done.returncode == 0 or not mounted_at(mountpoint):
            break
        if time.monotonic() > deadline:
            subprocess.run(["umount", "-l", mountpoint], capture_output=True, text=True)
            break
        time.sleep(0.02)  # busy: a killed process may still be closing files
    _wait_until(lambda: not mounted_at(mountpoint), timeout / 2, f"{mountpoint} to unmount")


class PowerCutFs:
    """One daemon process serving the model at `mountpoint`, in `mode` (ext4 or posix).

    Use as a context manager, or call `close()` in a finally: it unmounts and ends the
    daemon whatever state things are in."""

    def __init__(self, mountpoint, mode, log_path, drop_fsync=None, drop_fsyncdir=None):
        self.mountpoint = str(mountpoint)
        self.mode = mode
        self.log_path = str(log_path)
        self.stats = []  # one entry per mount: operations the daemon counted
        self.proc = None
        reason = fuse_unavailable_reason()
        if reason is not None:
            raise FuseUnavailable(reason)
        os.makedirs(self.mountpoint, exist_ok=True)
        if mounted_at(self.mountpoint):
            unmount(self.mountpoint)  # a leftover of an earlier, killed run
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(HERE.parent)] + [p for p in [env.get("PYTHONPATH")] if p])
        self._log = open(self.log_path, "ab")
        args = [sys.executable, "-m", "powercut.daemon", "--mode", mode, self.mountpoint]
        if drop_fsync:
            args += ["--drop-fsync", drop_fsync]
        if drop_fsyncdir:
            args += ["--drop-fsyncdir", drop_fsyncdir]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, env=env,
            text=True, bufsize=1)
        self._events: "queue.Queue[dict | None]" = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        try:
            self._await_mount()
        except Exception:
            self.close()
            raise

    def _pump(self):
        for line in self.proc.stdout:
            try:
                self._events.put(json.loads(line))
            except ValueError:
                self._events.put({"event": "noise", "line": line})
        self._events.put(None)

    def _expect(self, event, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the filesystem daemon did not report {event!r} within "
                                   f"{timeout:.0f} s; its log: {self.log_tail()}")
            try:
                got = self._events.get(timeout=left)
            except queue.Empty:
                continue
            if got is None:
                raise FuseUnavailable(f"the filesystem daemon exited (code {self.proc.wait()}) "
                                      f"before {event!r}; its log: {self.log_tail()}")
            if got.get("event") == "error":
                raise FuseUnavailable(f"the filesystem daemon failed: {got.get('message')}; "
                                      f"its log: {self.log_tail()}")
            if got.get("event") == event:
                return got

    def _await_mount(self):
        self._expect("mounted", MOUNT_TIMEOUT)
        _wait_until(lambda: os.path.ismount(self.mountpoint) and mounted_at(self.mountpoint),
                    MOUNT_TIMEOUT, f"{self.mountpoint} to be mounted")

    def log_tail(self, lines=20):
        """The end of the daemon's stderr (libfuse's messages, Python tracebacks)."""
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:
            return "<no log>"
        return "\n".join(text.splitlines()[-lines:]) or "<empty>"

    def _command(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def _remount(self, command, answer):
        unmount(self.mountpoint)
        self.stats.append(self._expect("unmounted", UNMOUNT_TIMEOUT)["stats"])
        self._command(command)
        got = self._expect(answer, MOUNT_TIMEOUT)
        self._await_mount()
        return got

    def cut(self):
        """Power loss. Whoever uses the mount must have been killed first (a real power
        cut kills them too). Returns what the cut discarded (files reverted, directory
        entries undone, inodes dropped); the mount's operation counts go to `stats`."""
        return self._remount("cut", "cut")["lost"]

    def keep(self):
        """Unmounts and mounts again losing nothing: what a process crash leaves."""
        self._remount("keep", "kept")

    def listing(self):
        """Every path with its current and durable size; unmounts and mounts again."""
        unmount(self.mountpoint)
        self.stats.append(self._expect("unmounted", UNMOUNT_TIMEOUT)["stats"])
        self._command("listing")
        paths = self._expect("listing", MOUNT_TIMEOUT)["paths"]
        self._command("keep")
        self._expect("kept", MOUNT_TIMEOUT)
        self._await_mount()
        return paths

    def close(self):
        """Unmounts (lazily if need be) and ends the daemon; safe to call twice."""
        try:
            if mounted_at(self.mountpoint):
                unmount(self.mountpoint)
        finally:
            if self.proc is not None:
                try:
                    self._command("quit")
                except (BrokenPipeError, ValueError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=10)
                self.proc = None
            if mounted_at(self.mountpoint):
                subprocess.run(["umount", "-l", self.mountpoint], capture_output=True)
            self._log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

