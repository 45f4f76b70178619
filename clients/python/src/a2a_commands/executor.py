"""An ``AgentExecutor`` that answers slash commands from a2a-commands."""

from __future__ import annotations

import enum
import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from typing import cast

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore
from a2a.types import a2a_pb2 as sdk
from a2a.utils.errors import TaskNotFoundError

from ._pb import commands_pb2 as pb
from .client import CommandsClient
from .convert import event_from_commands
from .errors import CommandsError
from .task_data import apply_changes, sub_task_states, task_snapshot

logger = logging.getLogger(__name__)

# Command syntax as the service reads it: `/`, a name, then whitespace or the end.
# (Python's `\s` is the reference's whitespace, `str.isspace()`.)
_COMMAND_SYNTAX = re.compile(r"/([a-z][a-z0-9-]*)(?:\s|\Z)")


class ParticipantRole(enum.IntEnum):
    """The sender's role on a task (``a2a.commands.v1.ParticipantRole``)."""

    ASSIGNEE = pb.PARTICIPANT_ROLE_ASSIGNEE
    REPORTER = pb.PARTICIPANT_ROLE_REPORTER
    WATCHER = pb.PARTICIPANT_ROLE_WATCHER
    ADMIN = pb.PARTICIPANT_ROLE_ADMIN
    NONE = pb.PARTICIPANT_ROLE_NONE


RoleResolver = Callable[[RequestContext], ParticipantRole | Awaitable[ParticipantRole]]
"""Gives the sender's role on the task a message was sent to (may be async)."""


def default_role(context: RequestContext) -> ParticipantRole:
    """The default sender role: ``ASSIGNEE`` if authenticated, else ``WATCHER``.

    a2a-sdk's task stores keep each task under its creator's user name
    (``resolve_user_scope``), so an authenticated caller only ever reaches tasks it
    created: it is their assignee. Unauthenticated callers all share one scope, so they
    may read (``/status``, ``/model``, ``/effort``) but change nothing. A gateway whose
    store is not scoped that way, or that trusts anonymous callers, passes its own
    ``role``.
    """
    user = context.call_context.user
    return ParticipantRole.ASSIGNEE if user.is_authenticated else ParticipantRole.WATCHER


def command_name(message: sdk.Message) -> str | None:
    """The name of a message that has command syntax (registered or not), else ``None``."""
    if len(message.parts) != 1 or message.parts[0].WhichOneof("content") != "text":
        return None
    match = _COMMAND_SYNTAX.match(message.parts[0].text)
    return match.group(1) if match else None


class CommandsExecutor(AgentExecutor):
    """Wraps a gateway's ``AgentExecutor`` so slash commands never reach its model.

    Every incoming message goes through Execute. An ordinary message is passed to the
    wrapped executor untouched. A command is answered here: its changes are applied
    (see :func:`~a2a_commands.task_data.apply_changes`), then its reply
    ``TaskStatusUpdateEvent`` is enqueued, with the task's state unchanged. When the
    command is a task's first message, the ``Task`` (``submitted``, holding the message)
    is enqueued first. The command's metadata (``command``, ``task_ref``) stays on the
    reply message and never lands on the stored task.

    When Execute fails (the service is unreachable, or rejects the request), a message
    that has command syntax (``/name ...``, registered or not) is answered with the reply
    ``/<name> failed: commands are unavailable right now`` and does not reach the model;
    any other message goes to the wrapped executor. The error is logged.

    Args:
        executor: The gateway's own executor.
        client: The a2a-commands client.
        task_store: The ``TaskStore`` given to the SDK's request handler; sub-tasks are
            created in it, and sub-task states read from it.
        role: The sender's role on the task (default :func:`default_role`).
    """

    def __init__(
        self,
        executor: AgentExecutor,
        client: CommandsClient,
        task_store: TaskStore,
        *,
        role: RoleResolver = default_role,
    ) -> None:
        self.executor = executor
        self._client = client
        self._store = task_store
        self._role = role

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Answers a command, or runs the wrapped executor."""
        if context.message is None or not context.task_id:
            await self.executor.execute(context, event_queue)
            return
        task = context.current_task
        first = task is None
        if task is None:
            task = sdk.Task(
                id=context.task_id,
                context_id=context.context_id or "",
                status=sdk.TaskStatus(state=sdk.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            task.status.timestamp.GetCurrentTime()
        reply = await self._command_reply(context, context.message, task)
        if reply is None:
            await self.executor.execute(context, event_queue)
            return
        if first:
            await event_queue.enqueue_event(task)
        await event_queue.enqueue_event(reply)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancels through the wrapped executor."""
        await self.executor.cancel(context, event_queue)

    async def complete(
        self, call_context: ServerCallContext, text: str, task_id: str | None = None, *, limit: int = 0
    ) -> pb.CompleteResponse:
        """Completions for ``text``, typed by the caller into task ``task_id`` (or no task).

        The task is read from the store under the caller's scope and sent as for
        Execute; the sender's role comes from the same ``role`` callback, given a
        ``RequestContext`` with the task and no message. Serves
        :func:`a2a_commands.completion.with_completion`.

        Raises:
            TaskNotFoundError: ``task_id`` is not in the store (for this caller).
            CommandsError: Complete failed.
        """
        task = None
        if task_id:
            task = await self._store.get(task_id, call_context)
            if task is None:
                raise TaskNotFoundError
        context = RequestContext(call_context, task_id=task_id, context_id=task.context_id if task else None, task=task)
        snapshot = task_snapshot(task, await sub_task_states(task, self._store, call_context)) if task else None
        return await self._client.complete(text, await self._sender(context), task=snapshot, limit=limit)

    async def _sender(self, context: RequestContext) -> pb.Sender:
        """The sender of ``context``'s request: the SDK user name and the ``role`` callback's role."""
        role = self._role(context)
        role = await role if inspect.isawaitable(role) else role
        return pb.Sender(id=context.call_context.user.user_name, role=cast("pb.ParticipantRole", role))

    async def _command_reply(
        self, context: RequestContext, message: sdk.Message, task: sdk.Task
    ) -> sdk.TaskStatusUpdateEvent | None:
        """The reply event of a command (changes applied), or ``None`` for an ordinary message."""
        call = context.call_context
        try:
            sender = await self._sender(context)
            # Sub-task states only matter to a command: spare the store for other messages.
            states = await sub_task_states(task, self._store, call) if command_name(message) else {}
            answer = await self._client.execute(message, task_snapshot(task, states), sender)
        except CommandsError as error:
            name = command_name(message)
            if name is None:
                logger.warning("a2a-commands: Execute failed, passing the message on: %s", error)
                return None
            logger.error("a2a-commands: Execute failed, /%s not run: %s", name, error)
            return _failure_reply(task, message, name)
        if answer.WhichOneof("result") != "command":
            return None
        reply = event_from_commands(answer.command.event)
        if answer.command.outcome == pb.OUTCOME_OK:
            await apply_changes(answer.command.changes, task, reply, self._store, call)
        return reply


def _failure_reply(task: sdk.Task, message: sdk.Message, name: str) -> sdk.TaskStatusUpdateEvent:
    """The reply to a command that could not be run, shaped like the service's replies."""
    text = f"/{name} failed: commands are unavailable right now"
    reply = sdk.Message(
        message_id=f"{message.message_id}:reply", context_id=task.context_id, task_id=task.id,
        role=sdk.ROLE_AGENT, parts=[sdk.Part(text=text)], metadata={"command": name},
    )
    status = sdk.TaskStatus(state=task.status.state, message=reply)
    status.timestamp.GetCurrentTime()
    return sdk.TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=status)
