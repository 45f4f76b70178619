"""Ports for test processes that bind their own (etcd, nginx, an agent on $PORT, a
sidecar started again on its address), shared by this suite and the Python kit's."""

import itertools
import os
import socket
import sys
import time

_next_port = itertools.count(os.getpid() * 97)


def free_port() -> int:
    """A port free now, for a process that binds it itself (etcd, nginx, an agent on
    $PORT), taken below the kernel's ephemeral range: the kernel hands out no port there
    by itself, so no outgoing connection or port-0 listener takes it between now and
    that bind, nor while etcd is killed and started again on it (the sidecars keep
    retrying the dead member all the while)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    low = 10_000
    candidates = range(low, ephemeral_low) if ephemeral_low > low + 1_000 else [0]
    if candidates == [0]:
        print(f"*** the ephemeral port range starts at {ephemeral_low}: ports are the kernel's choice ***",
              file=sys.stderr)
    for _ in range(len(candidates)):
        port = candidates[next(_next_port) % len(candidates)]
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise AssertionError(f"no free port below {ephemeral_low}")


def wait_for_port(port: int) -> None:
    """Returns once something listens on 127.0.0.1:`port` (a process that binds its own
    port says nothing when it is ready)."""
    deadline = time.monotonic() + 30  # a bound against a hang; readiness is the connect
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listens on {port}"
            time.sleep(0.05)
