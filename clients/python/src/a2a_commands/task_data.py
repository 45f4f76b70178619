"""The task data Execute needs, kept in the a2a-sdk ``Task`` itself.

An A2A ``Task`` has no name, settings, plan or sub-tasks. The kit keeps them in the
task's own ``metadata`` under one key, ``"a2a-commands"``, so a gateway that stores its
tasks in a2a-sdk's ``TaskStore`` needs no second store::

    task.metadata["a2a-commands"] = {
        "name": "Docs",                                        # shown by /status
        "settings": {"model": "gpt-x-mini", "effort": "high"}, # chosen; absent: default
        "plan": {"steps_done": 1, "steps_total": 3},           # absent: no plan
        "sub_state": "awaiting-answer",                        # or "awaiting-next-message"
        "sub_tasks": ["t-1.1", "t-1.2"],                       # ids, in creation order
        "parent": "t-1",                                       # on a sub-task only
        "goal": "Draft the API section"                        # on a sub-task only
    }

Every key is optional. The value is written whole: a2a-sdk's task manager merges an
event's ``metadata`` into the stored task key by key, replacing each key's value, so a
``TaskStatusUpdateEvent`` carrying :meth:`TaskData.metadata` updates the data together
with that event. That is how the kit applies a command's changes, and how a gateway sets
the name or the plan (``TaskUpdater.update_status(..., metadata=data.metadata())``).
Sub-task states are not copied: they are read from the sub-tasks in the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import a2a_pb2 as sdk
from google.protobuf import json_format

from ._pb import a2a_pb2 as ours
from ._pb import commands_pb2 as pb

METADATA_KEY = "a2a-commands"

_SUB_STATES = {
    "awaiting-next-message": pb.SUB_STATE_AWAITING_NEXT_MESSAGE,
    "awaiting-answer": pb.SUB_STATE_AWAITING_ANSWER,
}


@dataclass
class Plan:
    """How far a task's plan has got."""

    steps_done: int
    steps_total: int


@dataclass
class TaskData:
    """The kit's data of one task (``Task.metadata["a2a-commands"]``)."""

    name: str = ""
    model: str | None = None
    effort: str | None = None
    plan: Plan | None = None
    sub_state: str | None = None
    sub_tasks: list[str] = field(default_factory=list)
    parent: str | None = None
    goal: str | None = None

    @classmethod
    def from_task(cls, task: sdk.Task | None) -> TaskData:
        """Reads the data of ``task``; empty when it has none (or ``task`` is ``None``)."""
        if task is None or METADATA_KEY not in task.metadata:
            return cls()
        raw = json_format.MessageToDict(task.metadata).get(METADATA_KEY)
        if not isinstance(raw, dict):
            return cls()
        settings = raw.get("settings")
        settings = settings if isinstance(settings, dict) else {}
        plan = raw.get("plan")
        return cls(
            name=str(raw.get("name") or ""),
            model=_text(settings.get("model")),
            effort=_text(settings.get("effort")),
            plan=Plan(int(plan.get("steps_done", 0)), int(plan.get("steps_total", 0)))
            if isinstance(plan, dict) else None,
            sub_state=_text(raw.get("sub_state")),
            sub_tasks=[str(i) for i in raw.get("sub_tasks") or ()],
            parent=_text(raw.get("parent")),
            goal=_text(raw.get("goal")),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object stored under :data:`METADATA_KEY` (unset keys left out)."""
        settings = {k: v for k, v in (("model", self.model), ("effort", self.effort)) if v is not None}
        data: dict[str, Any] = {
            "name": self.name or None,
            "settings": settings or None,
            "plan": {"steps_done": self.plan.steps_done, "steps_total": self.plan.steps_total}
            if self.plan else None,
            "sub_state": self.sub_state,
            "sub_tasks": list(self.sub_tasks) or None,
            "parent": self.parent,
            "goal": self.goal,
        }
        return {k: v for k, v in data.items() if v is not None}

    def metadata(self) -> dict[str, Any]:
        """``{"a2a-commands": ...}``: event (or task) metadata that stores this data."""
        return {METADATA_KEY: self.to_dict()}


def task_snapshot(task: sdk.Task, sub_task_states: Mapping[str, int] | None = None) -> pb.TaskSnapshot:
    """Execute's ``TaskSnapshot`` of an a2a-sdk ``Task`` under the kit's convention.

    Args:
        task: The task; a state of ``TASK_STATE_UNSPECIFIED`` counts as submitted.
        sub_task_states: The current state of each sub-task by id (see
            :func:`sub_task_states`); a sub-task missing from it counts as submitted.
    """
    data = TaskData.from_task(task)
    states = sub_task_states or {}
    return pb.TaskSnapshot(
        id=task.id,
        context_id=task.context_id,
        name=data.name,
        state=_state(task.status.state),
        sub_state=_SUB_STATES.get(data.sub_state or "", pb.SUB_STATE_UNSPECIFIED),
        settings=pb.TaskSettings(model=data.model, effort=data.effort),
        plan=pb.PlanProgress(steps_done=data.plan.steps_done, steps_total=data.plan.steps_total)
        if data.plan else None,
        sub_tasks=[
            pb.SubTaskSnapshot(id=i, state=_state(states.get(i, 0)))
            for i in data.sub_tasks
        ],
    )


async def sub_task_states(task: sdk.Task, store: TaskStore, context: ServerCallContext) -> dict[str, int]:
    """The current state of each of ``task``'s sub-tasks found in ``store``."""
    states: dict[str, int] = {}
    for sub_task_id in TaskData.from_task(task).sub_tasks:
        sub_task = await store.get(sub_task_id, context)
        if sub_task is not None:
            states[sub_task_id] = sub_task.status.state
    return states


async def apply_changes(
    changes: pb.Changes,
    task: sdk.Task,
    event: sdk.TaskStatusUpdateEvent,
    store: TaskStore,
    context: ServerCallContext,
) -> None:
    """Applies Execute's ``changes`` to ``task`` under the kit's convention.

    A sub-task is created at once: a new ``Task`` with the given id, in the parent's
    context, ``submitted``, whose data names its ``parent`` and ``goal``, saved in
    ``store``. The parent's new data (settings merged, the sub-task appended) goes on
    ``event.metadata``, so the SDK stores it when it processes the reply ``event``.
    """
    data = TaskData.from_task(task)
    changed = False
    if changes.settings.HasField("model"):
        data.model, changed = changes.settings.model, True
    if changes.settings.HasField("effort"):
        data.effort, changed = changes.settings.effort, True
    if changes.HasField("sub_task"):
        new = changes.sub_task
        sub_task = sdk.Task(
            id=new.id,
            context_id=task.context_id,
            status=sdk.TaskStatus(state=sdk.TASK_STATE_SUBMITTED),
            metadata=TaskData(name=new.name, parent=task.id, goal=new.goal).metadata(),
        )
        sub_task.status.timestamp.GetCurrentTime()
        await store.save(sub_task, context)
        data.sub_tasks.append(new.id)
        changed = True
    if changed:
        event.metadata.update(data.metadata())


def _state(value: int) -> ours.TaskState:
    """A state as ours (the same numbers), unspecified counting as submitted."""
    return cast("ours.TaskState", value or ours.TASK_STATE_SUBMITTED)


def _text(value: object) -> str | None:
    return None if value is None else str(value)
