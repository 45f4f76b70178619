"""What the clients know: every change they sent, whether it was acknowledged (and at
which revision) or still in flight when the power went, and the check of a restarted
registry against that.

Writers own their names (``w<id>-<n>``) and never reuse one, so every change can be
told apart; the commands file owns ``f-...`` names. A change in flight may be found
done or not done, never half done; an acknowledged one must be found done.
"""

import random
import threading
from dataclasses import dataclass, field

import grpc

RPC_TIMEOUT = 30.0  # a bound against a hung server; kills end calls sooner
FILE_NAMES = ["f-alpha", "f-beta", "f-gamma", "f-delta", "f-eps", "f-zeta"]


@dataclass
class Writer:
    """One client's names: acknowledged state, and the change in flight."""

    id: int
    names: dict = field(default_factory=dict)  # name -> acknowledged description
    created_at: dict = field(default_factory=dict)  # name -> revision of its creation
    removed: set = field(default_factory=set)  # names whose unregister was acknowledged
    pending: tuple = None  # (name, description after, or None for an unregister)
    made: int = 0
    changes: int = 0  # descriptions made, so every description is new

    @property
    def prefix(self):
        return f"w{self.id}-"

    def next_change(self, rng):
        """Picks the next change: a new name, an override of one of its names (a new
        description), or an unregister. Returns (name, description or None, override)."""
        self.changes += 1
        existing = sorted(self.names)
        roll = rng.random()
        if not existing or roll < 0.4:
            name = f"{self.prefix}{self.made}"
            self.made += 1
            return name, f"made {self.changes}", False
        name = rng.choice(existing)
        if roll < 0.75:
            return name, f"changed {self.changes}", True
        return name, None, False

    def acknowledged(self, name, description, revision):
        """Records an acknowledged change."""
        self.pending = None
        if description is None:
            self.names.pop(name, None)
            self.created_at.pop(name, None)
            self.removed.add(name)
        else:
            if name not in self.names:
                self.created_at[name] = revision
            self.names[name] = description


@dataclass
class Findings:
    """What one check found wrong, by kind, one line each."""

    lost: list = field(default_factory=list)  # acknowledged, not there
    phantom: list = field(default_factory=list)  # there, never sent
    order: list = field(default_factory=list)
    revision: list = field(default_factory=list)
    done: int = 0  # changes in flight found done
    undone: int = 0  # changes in flight found not done

    def all(self):
        """Every finding, prefixed with its kind."""
        return ([f"lost: {x}" for x in self.lost] + [f"never sent: {x}" for x in self.phantom]
                + [f"order: {x}" for x in self.order] + [f"revision: {x}" for x in self.revision])


class Ledger:
    """Everything acknowledged in one data directory."""

    def __init__(self, writers=4):
        self.writers = [Writer(i) for i in range(writers)]
        self.file_versions = {}  # version -> [(name, description)] in file order
        self.file_acked = None  # version the registry is known to hold
        self.file_pending = None  # version sent (a start or a reconcile), no answer yet
        self.floor = 0  # highest revision acknowledged or served
        self.lock = threading.Lock()

    def note_revision(self, revision):
        """A revision acknowledged (an RPC's answer, a reconcile or a start's log)."""
        with self.lock:
            self.floor = max(self.floor, revision)

    def new_file_version(self, rng):
        """A new commands file version: some of the file's names, in a random order,
        with descriptions naming the version. Returns its number."""
        version = len(self.file_versions) + 1
        names = rng.sample(FILE_NAMES, rng.randint(1, len(FILE_NAMES)))
        self.file_versions[version] = [(n, f"file v{version} {n}") for n in names]
        return version

    def check(self, listed):
        """Compares a ListSpecs answer with what was acknowledged and in flight, then
        takes what it shows as the truth for the next round (in-flight changes resolved,
        losses accepted so they are reported once)."""
        found = Findings()
        commands = [(c.spec.name, c.spec.description) for c in listed.commands]
        actual = dict(commands)
        if listed.revision < self.floor:
            found.revision.append(f"revision {listed.revision} served, {self.floor} was "
                                  "acknowledged or served before")
        self.floor = listed.revision
        known = set()
        for w in self.writers:
            self._check_writer(w, actual, found)
            known.update(n for n in actual if n.startswith(w.prefix))
        self._check_file(commands, found)
        known.update(n for n in actual if n.startswith("f-"))
        for name in actual:
            if name not in known:
                found.phantom.append(f"{name} belongs to no client")
        # Order follows acknowledged creations (the revisions their answers gave).
        created = {}
        for w in self.writers:
            created.update(w.created_at)
        seen = [(created[n], n) for n, _ in commands if n in created]
        for (r1, n1), (r2, n2) in zip(seen, seen[1:]):
            if r1 >= r2:
                found.order.append(f"{n1} (created at revision {r1}) is listed before "
                                   f"{n2} (created at revision {r2})")
        return found

    def _check_writer(self, w, actual, found):
        pending_name = w.pending[0] if w.pending else None
        for name in actual:
            if (name.startswith(w.prefix) and name not in w.names and name != pending_name
                    and name not in w.removed):
                found.phantom.append(f"{name} is there but was never sent")
        names = set(w.names) | set(w.removed & set(actual))
        if pending_name is not None:
            names.add(pending_name)
        for name in sorted(names):
            acked = w.names.get(name)
            got = actual.get(name)
            in_flight = w.pending is not None and w.pending[0] == name
            if in_flight and got == w.pending[1] and got != acked:
                found.done += 1
            elif got == acked:
                found.undone += in_flight
            elif acked is None:
                found.lost.append(f"{name}: its unregister was acknowledged, yet it is there "
                                  f"({got!r})")
            else:
                found.lost.append(f"{name}: acknowledged {acked!r}, found {got!r}"
                                  + (f" (in flight: {w.pending[1]!r})" if in_flight else ""))
            # What is there now is the truth from here on.
            if got is None:
                w.names.pop(name, None)
                w.created_at.pop(name, None)
                if acked is not None:
                    w.removed.add(name)
            else:
                if acked is None:
                    w.created_at.pop(name, None)  # it exists, but since when is unknown
                w.names[name] = got
                w.removed.discard(name)
        w.pending = None

    def _check_file(self, commands, found):
        got = [(n, d) for n, d in commands if n.startswith("f-")]
        acked = self.file_versions.get(self.file_acked, [])
        pending = self.file_versions.get(self.file_pending)
        if got == acked:
            matched = self.file_acked
            found.undone += pending is not None and pending != acked
        elif pending is not None and got == pending:
            matched = self.file_pending
            found.done += 1
        else:
            matched = None
            same_set = [v for v, e in self.file_versions.items() if sorted(e) == sorted(got)]
            what = f"found {got}, acknowledged version {self.file_acked}: {acked}"
            if pending is not None:
                what += f", in flight version {self.file_pending}: {pending}"
            if same_set and same_set[-1] in (self.file_acked, self.file_pending):
                found.order.append(f"commands file: its commands are not in file order: {what}")
                matched = same_set[-1]
            else:
                found.lost.append(f"commands file: {what}")
        self.file_acked = matched
        self.file_pending = None


def run_writer(writer, ledger, addr, pb, seed, stop, killed, on_ack, unexpected):
    """A client thread's loop: changes its own names until `stop` is set or a call fails
    (the server was killed: the change stays in flight). An error before `killed` is
    set is a real error and goes to `unexpected`."""
    _, commands_pb2, commands_pb2_grpc = pb
    rng = random.Random(seed)
    with grpc.insecure_channel(addr) as channel:
        stub = commands_pb2_grpc.CommandServiceStub(channel)
        while not stop.is_set():
            name, description, override = writer.next_change(rng)
            writer.pending = (name, description)
            try:
                if description is None:
                    answer = stub.Unregister(commands_pb2.UnregisterRequest(name=name),
                                             timeout=RPC_TIMEOUT)
                else:
                    spec = commands_pb2.CommandSpec(name=name, description=description)
                    answer = stub.Register(commands_pb2.RegisterRequest(
                        spec=spec, override=override), timeout=RPC_TIMEOUT)
            except grpc.RpcError as e:
                if not killed.is_set():
                    unexpected.append(f"{name}: {e.code().name} {e.details()}")
                return
            writer.acknowledged(name, description, answer.revision)
            ledger.note_revision(answer.revision)
            on_ack()
