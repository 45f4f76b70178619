"""a2a-commands for a2a-sdk gateways: slash commands in a few lines.

- :class:`CommandsClient`: the async client of every RPC, raising :class:`CommandsError`;
  commands registered as :class:`Command` with a :class:`Handler` and
  :class:`ParticipantRole` values.
- :class:`CommandsExecutor`: wraps the gateway's ``AgentExecutor``; commands are answered
  from the service, everything else reaches the wrapped executor.
- :class:`CommandsCard`: the SDK card modifier that lists the commands on the card.
- :func:`a2a_commands.completion.with_completion`: the JSON-RPC method
  ``commands/complete`` on the gateway, for its A2A clients (needs Starlette).
- :class:`TaskData`, :func:`task_snapshot`, :func:`apply_changes`: the task data Execute
  needs, kept in ``Task.metadata["a2a-commands"]``.
- :mod:`a2a_commands.convert`: a2a-sdk's protobuf types to ours and back;
  :mod:`a2a_commands.pb`: our generated messages, enums and stubs.
"""

from . import pb
from .card import CommandsCard
from .commands import Command, Handler, HandlerProtocol, McpPrompt
from .client import (
    HANDLER_DEADLINE_MARGIN,
    NO_HANDLER_DEADLINE,
    CommandsClient,
    execute_deadline,
)
from .errors import (
    AlreadyExistsError,
    CommandsError,
    DeadlineExceededError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)
from .address import ADDRESS_ENV, DEFAULT_ADDRESS, Address, parse_address
from .executor import (
    FALLBACK_REPLY,
    CommandsExecutor,
    ParticipantRole,
    RoleResolver,
    default_role,
    fallback_reply,
    prompt_message,
)
from .syntax import command_name, may_be_command
from .task_data import (
    METADATA_KEY,
    Plan,
    SubState,
    TaskData,
    apply_changes,
    end_wait_for_next_message,
    new_sub_task,
    sub_task_states,
    task_snapshot,
)

EXTENSION_URI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
"""The Commands extension v1's URI (clients list it in ``A2A-Extensions``)."""

__all__ = [
    "ADDRESS_ENV",
    "DEFAULT_ADDRESS",
    "EXTENSION_URI",
    "FALLBACK_REPLY",
    "HANDLER_DEADLINE_MARGIN",
    "METADATA_KEY",
    "NO_HANDLER_DEADLINE",
    "Address",
    "AlreadyExistsError",
    "Command",
    "CommandsCard",
    "CommandsClient",
    "CommandsError",
    "CommandsExecutor",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "Handler",
    "HandlerProtocol",
    "InvalidArgumentError",
    "McpPrompt",
    "NotFoundError",
    "ParticipantRole",
    "PermissionDeniedError",
    "Plan",
    "ResourceExhaustedError",
    "RoleResolver",
    "SubState",
    "TaskData",
    "UnauthenticatedError",
    "UnavailableError",
    "apply_changes",
    "command_name",
    "default_role",
    "end_wait_for_next_message",
    "execute_deadline",
    "fallback_reply",
    "may_be_command",
    "new_sub_task",
    "parse_address",
    "pb",
    "prompt_message",
    "sub_task_states",
    "task_snapshot",
]
