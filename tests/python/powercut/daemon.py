"""The filesystem daemon: mounts the model, serves it until the mount is unmounted, then
takes one command from stdin and mounts again. A process of its own, so that a crash
of it (or of libfuse) cannot take the test runner down.

Run as ``python -m powercut.daemon --mode posix MOUNTPOINT`` with ``tests/python`` on
``PYTHONPATH`` (``--drop-fsync REGEX`` / ``--drop-fsyncdir REGEX`` make matching syncs
do nothing, to prove a test notices). Every line on stdout is one JSON object:

* ``{"event": "mounted"}`` once the kernel has the mount;
* ``{"event": "unmounted", "stats": {...}}`` when it is gone (operations counted during
  that mount, fsync and fsyncdir per path);
* ``{"event": "cut", "lost": {...}}`` or ``{"event": "kept"}`` answering the command;
* ``{"event": "error", "message": ...}`` before exiting non-zero.

Commands, one a line: ``cut`` (power loss: drop all that is not durable, then mount),
``keep`` (mount again with everything, as after a process crash), ``listing`` (print
every path with its current and durable size, then wait for the next command),
``quit``. If stdin closes while mounted (the test runner died), the daemon unmounts
itself and exits, so no mount outlives its test.
"""

import argparse
import json
import queue
import subprocess
import sys
import threading
import traceback


def _say(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main(argv=None):
    """Parses the arguments and serves mounts until told to quit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("ext4", "posix"), required=True)
    parser.add_argument("--debug", action="store_true", help="libfuse's request trace")
    parser.add_argument("--drop-fsync", metavar="REGEX",
                        help="fsync of a matching path succeeds and makes nothing durable")
    parser.add_argument("--drop-fsyncdir", metavar="REGEX",
                        help="fsyncdir of a matching path succeeds and makes nothing durable")
    parser.add_argument("mountpoint")
    args = parser.parse_args(argv)

    try:
        import mfusepy

        from powercut.fusefs import PowerCutOps
        from powercut.model import Model
    except Exception as e:  # noqa: BLE001 - reported to the driver, whatever it is
        _say(event="error", message=f"cannot load mfusepy/libfuse3: {e!r}")
        return 2

    commands: "queue.Queue[str | None]" = queue.Queue()
    mounted = threading.Event()

    def read_stdin():
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put(None)
        if mounted.is_set():
            # Orphaned while mounted: leave no mount behind.
            subprocess.run(["umount", "-l", args.mountpoint], check=False,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    threading.Thread(target=read_stdin, daemon=True).start()

    def on_mounted():
        mounted.set()
        _say(event="mounted")

    model = Model(args.mode, drop_fsync=args.drop_fsync, drop_fsyncdir=args.drop_fsyncdir)
    ops = PowerCutOps(model, on_mounted=on_mounted)
    while True:
        try:
            mfusepy.FUSE(ops, args.mountpoint, foreground=True, nothreads=False,
                         debug=args.debug, fsname=f"powercut-{args.mode}",
                         subtype="powercut")
        except Exception as e:  # noqa: BLE001 - reported to the driver, whatever it is
            _say(event="error", message=f"mount or serve failed: {e!r}",
                 trace=traceback.format_exc())
            return 3
        if not mounted.is_set():
            _say(event="error", message="libfuse returned without mounting "
                 "(see the daemon's stderr for libfuse's reason)")
            return 3
        mounted.clear()
        # The kernel closed every handle with the mount.
        ops.append.clear()
        with model.lock:
            model.handles.clear()
        _say(event="unmounted", stats=model.take_stats())
        while True:
            command = commands.get()
            if command == "listing":
                _say(event="listing", paths=model.listing())
                continue
            break
        if command is None or command == "quit":
            return 0
        if command == "cut":
            _say(event="cut", lost=model.cut())
        elif command == "keep":
            model.collect()
            _say(event="kept")
        else:
            _say(event="error", message=f"unknown command {command!r}")
            return 4


if __name__ == "__main__":
    sys.exit(main())
