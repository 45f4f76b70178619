"""The committed code in a2a_commands/_pb is what tools/generate.py makes from proto/."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import a2a

import a2a_commands
from a2a_commands import pb

KIT = pathlib.Path(__file__).resolve().parents[1]


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("generate", KIT / "tools" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_code_is_fresh(tmp_path: pathlib.Path) -> None:
    generator = _generator()
    committed = KIT / "src" / "a2a_commands" / "_pb"
    for path in generator.generate(tmp_path):
        assert path.read_text() == (committed / path.name).read_text(), (
            f"{path.name} is stale: run `python tools/generate.py` in clients/python"
        )


def test_installed_kit_is_this_source() -> None:
    installed = pathlib.Path(a2a_commands.__file__).parent / "_pb" / "commands_pb2.py"
    assert installed.read_text() == (KIT / "src" / "a2a_commands" / "_pb" / "commands_pb2.py").read_text()


def test_installs_beside_a2a_sdk_without_path_tricks() -> None:
    assert len(a2a.__path__) == 1 and "a2a_commands" not in str(a2a.__path__)
    assert pb.CommandSpec.DESCRIPTOR.full_name == "a2a.commands.v1.CommandSpec"
    assert pb.CommandSpec.__module__ == "a2a_commands._pb.commands_pb2"
    for code in (  # in a fresh interpreter, in either import order
        "import a2a_commands.pb, a2a.types.a2a_pb2, a2a.server.request_handlers; print('ok')",
        "import a2a.types.a2a_pb2, a2a.server.request_handlers, a2a_commands.pb; print('ok')",
    ):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert run.stdout == "ok\n"
