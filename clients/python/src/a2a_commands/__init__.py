"""a2a-commands for a2a-sdk gateways: slash commands in a few lines.

- :class:`CommandsClient`: the async client of every RPC, raising :class:`CommandsError`.
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
from .client import CommandsClient
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
from .executor import CommandsExecutor, ParticipantRole, RoleResolver, command_name, default_role
from .task_data import METADATA_KEY, Plan, TaskData, apply_changes, sub_task_states, task_snapshot

EXTENSION_URI = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
"""The Commands extension v1's URI (clients list it in ``A2A-Extensions``)."""

__all__ = [
    "EXTENSION_URI",
    "METADATA_KEY",
    "AlreadyExistsError",
    "CommandsCard",
    "CommandsClient",
    "CommandsError",
    "CommandsExecutor",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InvalidArgumentError",
    "NotFoundError",
    "ParticipantRole",
    "PermissionDeniedError",
    "Plan",
    "ResourceExhaustedError",
    "RoleResolver",
    "TaskData",
    "UnauthenticatedError",
    "UnavailableError",
    "apply_changes",
    "command_name",
    "default_role",
    "pb",
    "sub_task_states",
    "task_snapshot",
]
