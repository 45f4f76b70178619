"""Regenerates ``src/a2a_commands/_pb/`` from the repository's ``proto/`` directory.

Run ``python tools/generate.py`` from ``clients/python/`` after changing a proto (with
the pinned grpcio-tools of ``tests/requirements.txt``); ``tests/test_generated.py``
fails while the committed code is stale.

protoc names our modules ``a2a.commands.v1.*``, which would land inside a2a-sdk's own
top-level ``a2a`` package. The generated files are therefore rewritten to live in
``a2a_commands._pb`` and import each other relatively.
"""

from __future__ import annotations

import os
import pathlib
import re
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
PROTO_ROOT = HERE.parents[2] / "proto"
TARGET = HERE.parent / "src" / "a2a_commands" / "_pb"
PROTOS = ("a2a/commands/v1/a2a.proto", "a2a/commands/v1/commands.proto")
# The modules kept (a2a.proto has no services, so no a2a_pb2_grpc.py).
OUTPUTS = (
    "a2a_pb2.py",
    "a2a_pb2.pyi",
    "commands_pb2.py",
    "commands_pb2.pyi",
    "commands_pb2_grpc.py",
)


def _rewrite(text: str) -> str:
    """Moves generated code from ``a2a.commands.v1`` to ``a2a_commands._pb``."""
    text = re.sub(r"^from a2a\.commands\.v1 import ", "from . import ", text, flags=re.M)
    return re.sub(r"'a2a\.commands\.v1\.(\w+_pb2)'", r"'a2a_commands._pb.\1'", text)


def generate(target: pathlib.Path) -> list[pathlib.Path]:
    """Runs grpc_tools' protoc and writes the rewritten modules into ``target``."""
    import grpc_tools
    from grpc_tools import protoc

    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory() as out:
        args = [
            "protoc",
            f"-I{PROTO_ROOT}",
            f"-I{well_known}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            *PROTOS,
        ]
        if protoc.main(args) != 0:
            raise RuntimeError("protoc failed")
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for name in OUTPUTS:
            source = pathlib.Path(out, "a2a", "commands", "v1", name)
            path = target / name
            path.write_text(_rewrite(source.read_text()))
            written.append(path)
        return written


if __name__ == "__main__":
    for path in generate(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else TARGET):
        print(path)
