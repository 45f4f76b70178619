"""A listener on 127.0.0.1:0 whose every connection is served on a thread of its own:
the base of the raw-socket agents the front's tests stand behind it, for what no SDK
does on purpose (answer garbage, stall, record exactly what reached it)."""

from __future__ import annotations

import socket
import threading


class RawServer:
    """Accepts on a port of the kernel's choice (`port`, `url`) and hands each
    connection to `serve`, which subclasses write."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.sock.close()
