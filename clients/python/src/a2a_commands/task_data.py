"""The task data Execute needs, kept in the a2a-sdk ``Task`` itself.

An A2A ``Task`` has no name, settings, plan or sub-tasks. The kit keeps them in the
task's own ``metadata`` under one key, ``"a2a-commands"``, so a gateway that stores its
tasks in a2a-sdk's ``TaskStore`` needs no second store::

    task.metadata["a2a-commands"] = {
        "name": "Docs",                                        # shown by /status
        "settings": {"model": "gpt-x-mini", "effort": "high"}, # chosen; absent: default
        "plan": {"stepsDone": 1, "stepsTotal": 3},             # absent: no plan
        "subState": "awaiting-answer",                         # or "awaiting-next-message"
        "subTasks": ["t-1.1", "t-1.2"],                        # ids, in creation order
        "parentId": "t-1",                                     # on a sub-task only
        "goal": "Draft the API section"                        # on a sub-task only
    }

The spelling, and how it is read and written, are docs/kit-contract.md's (section 3),
the same in the TypeScript kit; ``docs/kit-task-data.schema.json`` is its schema. The
snake_case keys earlier versions of this kit wrote (``sub_tasks``, ``sub_state``,
``parent``, ``plan.steps_done``) are still read, and written in the new spelling.

The value is written whole: a2a-sdk's task manager merges an event's ``metadata`` into
the stored task key by key, replacing each key's value, so a ``TaskStatusUpdateEvent``
carrying :meth:`TaskData.metadata` updates the data together with that event. That is how
the kit applies a command's changes, and how a gateway sets the name or the plan
(``TaskUpdater.update_status(..., metadata=data.metadata())``). Sub-task states are not
copied: they are read from the sub-tasks in the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import a2a_pb2 as sdk
from google.protobuf import json_format

from ._pb import a2a_pb2 as ours
from ._pb import commands_pb2 as pb

METADATA_KEY = "a2a-commands"

SubState = Literal["awaiting-next-message", "awaiting-answer"]

_SUB_STATES: dict[str, pb.SubState] = {
    "awaiting-next-message": pb.SUB_STATE_AWAITING_NEXT_MESSAGE,
    "awaiting-answer": pb.SUB_STATE_AWAITING_ANSWER,
}
# The keys this kit reads and writes, each with the spelling earlier versions wrote.
_KNOWN = frozenset({"name", "settings", "plan", "subState", "sub_state", "subTasks", "sub_tasks",
                    "parentId", "parent", "goal"})
_MAX_COUNT = 2**32 - 1


@dataclass
class Plan:
    """How far a task's plan has got."""

    steps_done: int
    steps_total: int


@dataclass
class TaskData:
    """The kit's data of one task (``Task.metadata["a2a-commands"]``).

    ``other`` holds the keys this kit does not know, kept as they were when the data is
    written back.
    """

    name: str | None = None
    model: str | None = None
    effort: str | None = None
    plan: Plan | None = None
    sub_state: SubState | None = None
    sub_tasks: list[str] = field(default_factory=list)
    parent: str | None = None
    goal: str | None = None
    other: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_task(cls, task: sdk.Task | None) -> TaskData:
        """Reads the data of ``task``; empty when it has none (or ``task`` is ``None``)."""
        if task is None or METADATA_KEY not in task.metadata:
            return cls()
        return cls.from_dict(json_format.MessageToDict(task.metadata.fields[METADATA_KEY]))

    @classmethod
    def from_dict(cls, raw: object) -> TaskData:
        """Reads the JSON object stored under :data:`METADATA_KEY`; what does not fit is ignored."""
        if not isinstance(raw, dict):
            return cls()
        settings = raw.get("settings")
        settings = settings if isinstance(settings, dict) else {}
        plan = raw.get("plan")
        sub_state = _either(raw, "subState", "sub_state")
        sub_tasks = _either(raw, "subTasks", "sub_tasks")
        return cls(
            name=_text(raw.get("name")),
            model=_text(settings.get("model")),
            effort=_text(settings.get("effort")),
            plan=Plan(_count(_either(plan, "stepsDone", "steps_done")), _count(_either(plan, "stepsTotal", "steps_total")))
            if isinstance(plan, dict) else None,
            sub_state=cast("SubState", sub_state) if sub_state in _SUB_STATES else None,
            sub_tasks=[i for i in sub_tasks if isinstance(i, str)] if isinstance(sub_tasks, list) else [],
            parent=_text(_either(raw, "parentId", "parent")),
            goal=_text(raw.get("goal")),
            other={k: v for k, v in raw.items() if k not in _KNOWN},
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON object stored under :data:`METADATA_KEY` (keys with no value left out)."""
        settings = {k: v for k, v in (("model", self.model), ("effort", self.effort)) if v is not None}
        data: dict[str, Any] = {
            **self.other,
            "name": self.name,
            "settings": settings or None,
            "plan": {"stepsDone": self.plan.steps_done, "stepsTotal": self.plan.steps_total} if self.plan else None,
            "subState": self.sub_state,
            "subTasks": list(self.sub_tasks) or None,
            "parentId": self.parent,
            "goal": self.goal,
        }
        return {k: v for k, v in data.items() if v is not None}

    def metadata(self) -> dict[str, Any]:
        """``{"a2a-commands": ...}``: event (or task) metadata that stores this data."""
        return {METADATA_KEY: self.to_dict()}

    def changed(self, changes: pb.Changes) -> TaskData:
        """This data with Execute's ``changes`` applied (a new sub-task's id appended)."""
        data = replace(self, sub_tasks=list(self.sub_tasks), other=dict(self.other))
        if changes.settings.HasField("model"):
            data.model = changes.settings.model
        if changes.settings.HasField("effort"):
            data.effort = changes.settings.effort
        if changes.HasField("sub_task"):
            data.sub_tasks.append(changes.sub_task.id)
        return data


def task_snapshot(task: sdk.Task, sub_task_states: Mapping[str, int] | None = None) -> pb.TaskSnapshot:
    """Execute's ``TaskSnapshot`` of an a2a-sdk ``Task`` under the kit's convention.

    Args:
        task: The task; a state of ``TASK_STATE_UNSPECIFIED`` counts as submitted. Its
            sub-state is sent only while it is input-required.
        sub_task_states: The current state of each sub-task by id (see
            :func:`sub_task_states`); a sub-task missing from it counts as submitted.
    """
    data = TaskData.from_task(task)
    states = sub_task_states or {}
    state = _state(task.status.state)
    return pb.TaskSnapshot(
        id=task.id,
        context_id=task.context_id,
        name=data.name or "",
        state=state,
        sub_state=_SUB_STATES.get(data.sub_state or "", pb.SUB_STATE_UNSPECIFIED)
        if state == ours.TASK_STATE_INPUT_REQUIRED else pb.SUB_STATE_UNSPECIFIED,
        settings=pb.TaskSettings(model=data.model, effort=data.effort),
        plan=pb.PlanProgress(steps_done=data.plan.steps_done, steps_total=data.plan.steps_total)
        if data.plan else None,
        sub_tasks=[pb.SubTaskSnapshot(id=i, state=_state(states.get(i, 0))) for i in data.sub_tasks],
    )


async def sub_task_states(task: sdk.Task, store: TaskStore, context: ServerCallContext) -> dict[str, int]:
    """The current state of each of ``task``'s sub-tasks found in ``store``."""
    states: dict[str, int] = {}
    for sub_task_id in TaskData.from_task(task).sub_tasks:
        sub_task = await store.get(sub_task_id, context)
        if sub_task is not None:
            states[sub_task_id] = sub_task.status.state
    return states


def new_sub_task(parent: sdk.Task, sub_task: pb.SubTaskToCreate) -> sdk.Task:
    """The ``Task`` a ``/sub-task`` creates: submitted, in the parent's context, its goal as history."""
    goal = sdk.Message(
        message_id=f"{sub_task.id}:goal", context_id=parent.context_id, task_id=sub_task.id, role=sdk.ROLE_USER,
        parts=[sdk.Part(text=sub_task.goal)], reference_task_ids=[parent.id],
    )
    created = sdk.Task(
        id=sub_task.id, context_id=parent.context_id, status=sdk.TaskStatus(state=sdk.TASK_STATE_SUBMITTED),
        history=[goal], metadata=TaskData(name=sub_task.name, goal=sub_task.goal, parent=parent.id).metadata(),
    )
    created.status.timestamp.GetCurrentTime()
    return created


async def apply_changes(
    changes: pb.Changes,
    task: sdk.Task,
    event: sdk.TaskStatusUpdateEvent,
    store: TaskStore,
    context: ServerCallContext,
) -> None:
    """Applies Execute's ``changes`` to ``task`` under the kit's convention.

    A sub-task is created at once (:func:`new_sub_task`) and saved in ``store``. The
    parent's new data goes on ``event.metadata``, so the SDK stores it when it processes
    the reply ``event``.
    """
    if changes.HasField("sub_task"):
        await store.save(new_sub_task(task, changes.sub_task), context)
    if changes.settings.HasField("model") or changes.settings.HasField("effort") or changes.HasField("sub_task"):
        event.metadata.update(TaskData.from_task(task).changed(changes).metadata())


async def end_wait_for_next_message(task: sdk.Task, store: TaskStore, context: ServerCallContext) -> bool:
    """Clears ``task``'s sub-state ``awaiting-next-message``: the message it waited for is here.

    Call it when a message that is not a command is handed to the agent
    (docs/kit-contract.md, section 4). The data is changed in ``task`` itself, so the
    agent reads it as it now is (and a2a-sdk, whose ``RequestContext.current_task`` is its
    task manager's own copy, writes it with the agent's next event), and saved in ``store``
    at once, so it holds even when the agent emits no task event. ``awaiting-answer`` is
    left alone: the agent set it, and only the agent knows whether this message answers.

    Returns:
        Whether there was such a wait to end.
    """
    data = TaskData.from_task(task)
    if data.sub_state != "awaiting-next-message":
        return False
    task.metadata.update(replace(data, sub_state=None).metadata())
    await store.save(task, context)
    return True


def _either(raw: object, key: str, old_key: str) -> Any:
    """``raw[key]``, else the old spelling's value."""
    if not isinstance(raw, dict):
        return None
    return raw[key] if key in raw else raw.get(old_key)


def _count(value: object) -> int:
    """A step count: a number's integer part in 0..2**32-1; anything else is 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0
    return min(max(int(value), 0), _MAX_COUNT)


def _state(value: int) -> ours.TaskState:
    """A state as ours (the same numbers), unspecified counting as submitted."""
    return cast("ours.TaskState", value or ours.TASK_STATE_SUBMITTED)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
