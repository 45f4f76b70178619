"""Run by scripts/test-python-kit.sh in a fresh virtual environment that holds only what
README.md's install line installed: the README gateway's imports, and uvicorn, resolve."""

import ast
import importlib
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
section = README.read_text().split("## Slash commands in an existing gateway", 1)[1]
block = re.search(r"```python\n(.*?)```", section, re.S)
assert block, "README.md has no gateway block"
tree = ast.parse(block.group(1))
modules = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)} - {"my_agent"}
modules |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
for module in sorted(modules | {"uvicorn", "sse_starlette"}):
    importlib.import_module(module)
print("the README gateway's imports resolve:", ", ".join(sorted(modules)))
