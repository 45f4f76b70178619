"""scripts/tck.sh's bookkeeping for the A2A conformance suite (the TCK), in two roles.

As a pytest plugin (`-p tck_results --tck-results FILE`, with scripts/ on PYTHONPATH):
writes each test's binding, outcome and message to FILE as JSON. The binding is the
test's `transport` parameter or its transport marker, as the TCK itself reads them, else
its name's ending (`..._jsonrpc`, `..._rest`); tests with none of them (the agent
card's, and a few that use whichever binding comes first) are "any".

As a program (`python3 scripts/tck_results.py DIR`): reads DIR/<agent>.direct.json and
DIR/<agent>.front.json and prints, per agent and binding, how many tests passed, failed
and were skipped straight to the agent and through the front, then the tests that fail
through the front but not direct (exit status 1 if there are any), and those that pass
direct but are skipped through the front.
"""

from __future__ import annotations

import json
import pathlib
import sys

BINDINGS = ("jsonrpc", "http_json", "grpc")
NAME_SUFFIXES = (("_jsonrpc", "jsonrpc"), ("_http_json", "http_json"), ("_rest", "http_json"), ("_grpc", "grpc"))

# ---------------------------------------------------------------------------
# The plugin
# ---------------------------------------------------------------------------

_binding: dict[str, str] = {}
_results: dict[str, dict] = {}


def pytest_addoption(parser) -> None:
    parser.addoption("--tck-results", dest="tck_results", default=None,
                     help="write each test's binding, outcome and message to this JSON file")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        binding = callspec.params.get("transport") if callspec else None
        if binding is None:
            binding = next((b for b in BINDINGS if item.get_closest_marker(b)), None)
        if binding is None:
            # Some tests are written once per binding with neither: their names say it.
            name = getattr(item, "originalname", item.name)
            binding = next((b for suffix, b in NAME_SUFFIXES if name.endswith(suffix)), "any")
        _binding[item.nodeid] = binding


def _message(report) -> str:
    if hasattr(report, "wasxfail"):
        text = report.wasxfail
    elif isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        text = report.longrepr[2]
    else:
        crash = getattr(report.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else str(report.longrepr)
    text = " ".join(str(text).split())
    return text if len(text) <= 400 else text[:400] + "..."


def pytest_runtest_logreport(report) -> None:
    # The first phase that is not a plain pass decides; a test whose every phase passed
    # passed. An xfail (a SHOULD the agent misses) counts as a failure: a check failed.
    if report.nodeid in _results and _results[report.nodeid]["outcome"] != "passed":
        return
    if report.passed:
        if report.when != "call":
            return
        outcome = "passed"  # an xpass (a SHOULD met) too
    elif report.skipped:
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
    else:
        outcome = "failed" if report.when == "call" else "error"
    _results[report.nodeid] = {
        "binding": _binding.get(report.nodeid, "any"),
        "outcome": outcome,
        "message": "" if outcome == "passed" else _message(report),
    }


def pytest_sessionfinish(session, exitstatus) -> None:
    path = session.config.getoption("tck_results")
    if path:
        pathlib.Path(path).write_text(json.dumps(_results, indent=1, sort_keys=True))


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------

# The table's three columns: an xfail and an error are failures too.
COLUMN = {"passed": "pass", "failed": "fail", "error": "fail", "xfailed": "fail", "skipped": "skip"}


def _counts(results: dict, binding: str) -> dict[str, int]:
    n = {"pass": 0, "fail": 0, "skip": 0}
    for r in results.values():
        if r["binding"] == binding:
            n[COLUMN[r["outcome"]]] += 1
    return n


def _cells(n: dict[str, int]) -> str:
    return f"{n['pass']:>4} {n['fail']:>4} {n['skip']:>4}"


def report(out: pathlib.Path) -> int:
    agents = sorted(p.name.removesuffix(".direct.json") for p in out.glob("*.direct.json"))
    print(f"{'agent':<10} {'binding':<10} {'direct: pass fail skip':>22}   {'front: pass fail skip':>21}")
    worse, skipped, unserved = [], [], set()
    for agent in agents:
        direct = json.loads((out / f"{agent}.direct.json").read_text())
        front_path = out / f"{agent}.front.json"
        front = json.loads(front_path.read_text()) if front_path.exists() else {}
        bindings = sorted({r["binding"] for r in direct.values()} | {r["binding"] for r in front.values()},
                          key=lambda b: (b == "any", b))
        for binding in bindings:
            d, f = _counts(direct, binding), _counts(front, binding)
            if d["pass"] + d["fail"] + f["pass"] + f["fail"] == 0:
                unserved.add(binding)  # not on the card: the TCK skips all its tests
                continue
            print(f"{agent:<10} {binding:<10} {'':>8}{_cells(d)}   {'':>7}{_cells(f)}")
        for nodeid in sorted(set(direct) | set(front)):
            d, f = direct.get(nodeid), front.get(nodeid)
            if f is None or d is None:
                continue
            if COLUMN[f["outcome"]] == "fail" and COLUMN[d["outcome"]] != "fail":
                worse.append((agent, nodeid, d, f))
            elif f["outcome"] == "skipped" and d["outcome"] == "passed":
                skipped.append((agent, nodeid, d, f))
    if unserved:
        print(f"(every test skipped, direct and through the front: {', '.join(sorted(unserved))})")
    print("(fail: failed, errors, and xfails, a SHOULD missed; any: tests of no one binding)")
    print()
    print(f"Fail through the front, not direct: {len(worse)}")
    for agent, nodeid, d, f in worse:
        print(f"  [{agent}] {nodeid} ({f['outcome']}; direct: {d['outcome']})\n      {f['message']}")
    if skipped:
        # A test skips when its setup (a task in the state it needs) did not come out
        # as it asked: through the front, that can hide a failure too.
        print(f"Pass direct, skipped through the front: {len(skipped)}")
        for agent, nodeid, d, f in skipped:
            print(f"  [{agent}] {nodeid}\n      {f['message']}")
    return 1 if worse else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DIR")
    sys.exit(report(pathlib.Path(sys.argv[1])))
