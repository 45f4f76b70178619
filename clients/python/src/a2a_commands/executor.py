"""An ``AgentExecutor`` that answers slash commands from a2a-commands."""

from __future__ import annotations

import enum
import inspect
import logging
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
from .syntax import command_name, may_be_command
from .task_data import TaskData, apply_changes, end_wait_for_next_message, sub_task_states, task_snapshot

logger = logging.getLogger(__name__)

FALLBACK_REPLY = "/{name} failed: commands are unavailable right now"
"""The reply to a command when the sidecar cannot answer (docs/kit-contract.md, section 5)."""


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


class CommandsExecutor(AgentExecutor):
    """Wraps a gateway's ``AgentExecutor`` so slash commands never reach its model.

    Follows docs/kit-contract.md. A message that cannot be a command
    (:func:`~a2a_commands.syntax.may_be_command`: not one text part starting with ``/``
    and a letter) goes to the wrapped executor at once, without a call to the service.
    Any other message goes through Execute: an ordinary one is passed to the wrapped
    executor untouched; a command is answered here. Its changes are applied (see
    :func:`~a2a_commands.task_data.apply_changes`), then the reply
    ``TaskStatusUpdateEvent`` is enqueued, with the task's state unchanged. A command
    that is a task's first message creates the task first (the ``Task`` is enqueued), as
    the reference harness does: ``input-required``, awaiting the next message. The command's metadata (``command``,
    ``task_ref``) stays on the reply message and never lands on the stored task. The
    next message that is not a command ends that wait: the sub-state
    ``awaiting-next-message`` is cleared from the task data before the wrapped executor
    runs (``awaiting-answer``, the agent's own, is left to the agent).

    A prompt command (Execute answers ``prompt``) reaches the wrapped executor with the
    message's text replaced by the expansion (:func:`prompt_message`): the original text
    and ``{"command": name}`` stay in the message's metadata, and the task moves as the
    agent moves it.

    When Execute fails (the service is unreachable, or rejects the request), a message
    that has command syntax (``/name ...``, registered or not) is answered with the reply
    :data:`FALLBACK_REPLY` and does not reach the model; any other message goes to the
    wrapped executor. The error is logged.

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
        message = context.message
        if message is None or not context.task_id or not may_be_command(message):
            await self._to_agent(context, event_queue)
            return
        task, created = context.current_task, None
        if task is None:
            # A new task is parked input-required, awaiting the next message: Execute sees it so.
            created = _new_task(context.task_id, context.context_id or "", message)
            task = _parked(created)
        reply = await self._command_reply(context, message, task)
        if isinstance(reply, pb.PromptExpansion):
            context, reply = _prompt_context(context, reply), None
        if reply is None:
            await self._to_agent(context, event_queue)
            return
        if created is not None:  # a2a-sdk refuses a second Task for a task it has
            await event_queue.enqueue_event(created)
        await event_queue.enqueue_event(reply)

    async def _to_agent(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Runs the wrapped executor on a message that is not a command.

        That message is the one a task parked ``awaiting-next-message`` waited for: the
        wait ends before the agent runs, so an agent that leaves the task input-required
        again does not keep a stale sub-state (docs/kit-contract.md, section 4).
        """
        if context.message is not None and context.current_task is not None:
            await end_wait_for_next_message(context.current_task, self._store, context.call_context)
        await self.executor.execute(context, event_queue)

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
    ) -> sdk.TaskStatusUpdateEvent | pb.PromptExpansion | None:
        """The reply event of a command (changes applied), a prompt command's expansion, or
        ``None`` for an ordinary message."""
        call = context.call_context
        try:
            sender = await self._sender(context)
            states = await sub_task_states(task, self._store, call)
            # A sidecar that stops answering gives the fallback within seconds; a handler
            # keeps all its time (docs/kit-contract.md, section 5).
            deadline = self._client.execute_deadline(command_name(message))
            answer = await self._client.execute(
                message, task_snapshot(task, states), sender, timeout=deadline, accepts_prompt=True
            )
        except CommandsError as error:
            reply = fallback_reply(task, message)
            if reply is None:
                logger.warning("a2a-commands: Execute failed, passing the message on: %s", error)
            else:
                logger.error("a2a-commands: Execute failed, /%s not run: %s", command_name(message), error)
            return reply
        if answer.WhichOneof("result") == "prompt":
            return answer.prompt
        if answer.WhichOneof("result") != "command":
            return None
        reply = event_from_commands(answer.command.event)
        if answer.command.outcome == pb.OUTCOME_OK:
            await apply_changes(answer.command.changes, task, reply, self._store, call)
        return reply


def prompt_message(message: sdk.Message, expansion: pb.PromptExpansion) -> sdk.Message:
    """``message`` as the agent reads it for a prompt command (a copy; ``message`` is kept).

    Its one part is the expansion's text; its metadata keeps what it had and gains
    ``command`` (the command's name) and ``originalText`` (the text as typed), as
    docs/kit-contract.md, section 9, says.
    """
    changed = sdk.Message()
    changed.CopyFrom(message)
    original = message.parts[0].text if len(message.parts) == 1 else ""
    del changed.parts[:]
    changed.parts.add(text=expansion.text)
    changed.metadata.update({"command": expansion.command.name, "originalText": original})
    return changed


def _prompt_context(context: RequestContext, expansion: pb.PromptExpansion) -> RequestContext:
    """``context`` with its message as the agent reads it for a prompt command; the SDK's
    own request (from which it records the message as typed) is left as it was."""
    assert context.message is not None
    request = sdk.SendMessageRequest(message=prompt_message(context.message, expansion), tenant=context.tenant)
    if context.configuration is not None:
        request.configuration.CopyFrom(context.configuration)
    if context.metadata:
        request.metadata.update(context.metadata)
    return RequestContext(
        context.call_context, request, task_id=context.task_id, context_id=context.context_id,
        task=context.current_task, related_tasks=context.related_tasks,
    )


def _new_task(task_id: str, context_id: str, message: sdk.Message) -> sdk.Task:
    """The task a command creates as its first message, as first sent: submitted, holding it.

    Its data already says it awaits the next message; the reply moves it to input-required
    (sent as one Task, a non-streaming answer would stop at it, before the reply).
    """
    task = sdk.Task(
        id=task_id, context_id=context_id, status=sdk.TaskStatus(state=sdk.TASK_STATE_SUBMITTED),
        history=[message], metadata=TaskData(sub_state="awaiting-next-message").metadata(),
    )
    task.status.timestamp.GetCurrentTime()
    return task


def _parked(task: sdk.Task) -> sdk.Task:
    """``task`` as the reply leaves it: input-required."""
    parked = sdk.Task()
    parked.CopyFrom(task)
    parked.status.state = sdk.TASK_STATE_INPUT_REQUIRED
    return parked


def fallback_reply(task: sdk.Task, message: sdk.Message) -> sdk.TaskStatusUpdateEvent | None:
    """The reply when the service cannot answer: for a message with command syntax, else ``None``.

    Shaped like the service's replies: ``<message id>:reply``, the task's state unchanged,
    ``{"command": name}`` on the reply message.
    """
    name = command_name(message)
    if name is None:
        return None
    text = FALLBACK_REPLY.format(name=name)
    reply = sdk.Message(
        message_id=f"{message.message_id}:reply", context_id=task.context_id, task_id=task.id,
        role=sdk.ROLE_AGENT, parts=[sdk.Part(text=text)], metadata={"command": name},
    )
    status = sdk.TaskStatus(state=task.status.state, message=reply)
    status.timestamp.GetCurrentTime()
    return sdk.TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=status)
