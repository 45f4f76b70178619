from . import a2a_pb2 as _a2a_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CommandBody(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMMAND_BODY_UNSPECIFIED: _ClassVar[CommandBody]
    COMMAND_BODY_BUILTIN: _ClassVar[CommandBody]
    COMMAND_BODY_NONE: _ClassVar[CommandBody]
    COMMAND_BODY_HANDLER: _ClassVar[CommandBody]
    COMMAND_BODY_PROMPT: _ClassVar[CommandBody]

class CommandSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMMAND_SOURCE_UNSPECIFIED: _ClassVar[CommandSource]
    COMMAND_SOURCE_API: _ClassVar[CommandSource]
    COMMAND_SOURCE_BUILTIN: _ClassVar[CommandSource]
    COMMAND_SOURCE_FILE: _ClassVar[CommandSource]

class RegisterOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REGISTER_OUTCOME_UNSPECIFIED: _ClassVar[RegisterOutcome]
    REGISTER_OUTCOME_CREATED: _ClassVar[RegisterOutcome]
    REGISTER_OUTCOME_REPLACED: _ClassVar[RegisterOutcome]
    REGISTER_OUTCOME_UNCHANGED: _ClassVar[RegisterOutcome]

class OrdinaryReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ORDINARY_REASON_UNSPECIFIED: _ClassVar[OrdinaryReason]
    ORDINARY_REASON_NOT_SINGLE_TEXT_PART: _ClassVar[OrdinaryReason]
    ORDINARY_REASON_NOT_COMMAND_SYNTAX: _ClassVar[OrdinaryReason]
    ORDINARY_REASON_NOT_REGISTERED: _ClassVar[OrdinaryReason]

class ParticipantRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARTICIPANT_ROLE_UNSPECIFIED: _ClassVar[ParticipantRole]
    PARTICIPANT_ROLE_ASSIGNEE: _ClassVar[ParticipantRole]
    PARTICIPANT_ROLE_REPORTER: _ClassVar[ParticipantRole]
    PARTICIPANT_ROLE_WATCHER: _ClassVar[ParticipantRole]
    PARTICIPANT_ROLE_ADMIN: _ClassVar[ParticipantRole]
    PARTICIPANT_ROLE_NONE: _ClassVar[ParticipantRole]

class SubState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUB_STATE_UNSPECIFIED: _ClassVar[SubState]
    SUB_STATE_AWAITING_NEXT_MESSAGE: _ClassVar[SubState]
    SUB_STATE_AWAITING_ANSWER: _ClassVar[SubState]

class EventJsonFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_JSON_FORMAT_UNSPECIFIED: _ClassVar[EventJsonFormat]
    EVENT_JSON_FORMAT_A2A_0_3: _ClassVar[EventJsonFormat]
    EVENT_JSON_FORMAT_A2A_1_0: _ClassVar[EventJsonFormat]

class EventForm(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_FORM_UNSPECIFIED: _ClassVar[EventForm]
    EVENT_FORM_PROTOBUF: _ClassVar[EventForm]
    EVENT_FORM_A2A_1_0_JSON: _ClassVar[EventForm]
    EVENT_FORM_A2A_0_3_JSON: _ClassVar[EventForm]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_OK: _ClassVar[Outcome]
    OUTCOME_REFUSED: _ClassVar[Outcome]
    OUTCOME_FAILED: _ClassVar[Outcome]
    OUTCOME_NO_HANDLER: _ClassVar[Outcome]
COMMAND_BODY_UNSPECIFIED: CommandBody
COMMAND_BODY_BUILTIN: CommandBody
COMMAND_BODY_NONE: CommandBody
COMMAND_BODY_HANDLER: CommandBody
COMMAND_BODY_PROMPT: CommandBody
COMMAND_SOURCE_UNSPECIFIED: CommandSource
COMMAND_SOURCE_API: CommandSource
COMMAND_SOURCE_BUILTIN: CommandSource
COMMAND_SOURCE_FILE: CommandSource
REGISTER_OUTCOME_UNSPECIFIED: RegisterOutcome
REGISTER_OUTCOME_CREATED: RegisterOutcome
REGISTER_OUTCOME_REPLACED: RegisterOutcome
REGISTER_OUTCOME_UNCHANGED: RegisterOutcome
ORDINARY_REASON_UNSPECIFIED: OrdinaryReason
ORDINARY_REASON_NOT_SINGLE_TEXT_PART: OrdinaryReason
ORDINARY_REASON_NOT_COMMAND_SYNTAX: OrdinaryReason
ORDINARY_REASON_NOT_REGISTERED: OrdinaryReason
PARTICIPANT_ROLE_UNSPECIFIED: ParticipantRole
PARTICIPANT_ROLE_ASSIGNEE: ParticipantRole
PARTICIPANT_ROLE_REPORTER: ParticipantRole
PARTICIPANT_ROLE_WATCHER: ParticipantRole
PARTICIPANT_ROLE_ADMIN: ParticipantRole
PARTICIPANT_ROLE_NONE: ParticipantRole
SUB_STATE_UNSPECIFIED: SubState
SUB_STATE_AWAITING_NEXT_MESSAGE: SubState
SUB_STATE_AWAITING_ANSWER: SubState
EVENT_JSON_FORMAT_UNSPECIFIED: EventJsonFormat
EVENT_JSON_FORMAT_A2A_0_3: EventJsonFormat
EVENT_JSON_FORMAT_A2A_1_0: EventJsonFormat
EVENT_FORM_UNSPECIFIED: EventForm
EVENT_FORM_PROTOBUF: EventForm
EVENT_FORM_A2A_1_0_JSON: EventForm
EVENT_FORM_A2A_0_3_JSON: EventForm
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_OK: Outcome
OUTCOME_REFUSED: Outcome
OUTCOME_FAILED: Outcome
OUTCOME_NO_HANDLER: Outcome

class CommandSpec(_message.Message):
    __slots__ = ("name", "description", "argument_hint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ARGUMENT_HINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    argument_hint: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., argument_hint: _Optional[str] = ...) -> None: ...

class PromptBinding(_message.Message):
    __slots__ = ("template", "mcp")
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    MCP_FIELD_NUMBER: _ClassVar[int]
    template: str
    mcp: McpPrompt
    def __init__(self, template: _Optional[str] = ..., mcp: _Optional[_Union[McpPrompt, _Mapping]] = ...) -> None: ...

class McpPrompt(_message.Message):
    __slots__ = ("url", "name", "timeout_ms", "headers")
    URL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    url: str
    name: str
    timeout_ms: int
    headers: _containers.RepeatedCompositeFieldContainer[HandlerHeader]
    def __init__(self, url: _Optional[str] = ..., name: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[HandlerHeader, _Mapping]]] = ...) -> None: ...

class HandlerBinding(_message.Message):
    __slots__ = ("grpc", "json_rpc", "mcp", "timeout_ms", "headers")
    GRPC_FIELD_NUMBER: _ClassVar[int]
    JSON_RPC_FIELD_NUMBER: _ClassVar[int]
    MCP_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    grpc: str
    json_rpc: str
    mcp: str
    timeout_ms: int
    headers: _containers.RepeatedCompositeFieldContainer[HandlerHeader]
    def __init__(self, grpc: _Optional[str] = ..., json_rpc: _Optional[str] = ..., mcp: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[HandlerHeader, _Mapping]]] = ...) -> None: ...

class HandlerHeader(_message.Message):
    __slots__ = ("name", "value_file")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FILE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value_file: str
    def __init__(self, name: _Optional[str] = ..., value_file: _Optional[str] = ...) -> None: ...

class RegisteredCommand(_message.Message):
    __slots__ = ("spec", "body", "handler", "source", "allowed_roles", "hidden", "prompt")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    HANDLER_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_ROLES_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    spec: CommandSpec
    body: CommandBody
    handler: HandlerBinding
    source: CommandSource
    allowed_roles: _containers.RepeatedScalarFieldContainer[ParticipantRole]
    hidden: bool
    prompt: PromptBinding
    def __init__(self, spec: _Optional[_Union[CommandSpec, _Mapping]] = ..., body: _Optional[_Union[CommandBody, str]] = ..., handler: _Optional[_Union[HandlerBinding, _Mapping]] = ..., source: _Optional[_Union[CommandSource, str]] = ..., allowed_roles: _Optional[_Iterable[_Union[ParticipantRole, str]]] = ..., hidden: _Optional[bool] = ..., prompt: _Optional[_Union[PromptBinding, _Mapping]] = ...) -> None: ...

class RegisterRequest(_message.Message):
    __slots__ = ("spec", "override", "handler", "allowed_roles", "hidden", "replace_access", "prompt")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    HANDLER_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_ROLES_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    REPLACE_ACCESS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    spec: CommandSpec
    override: bool
    handler: HandlerBinding
    allowed_roles: _containers.RepeatedScalarFieldContainer[ParticipantRole]
    hidden: bool
    replace_access: bool
    prompt: PromptBinding
    def __init__(self, spec: _Optional[_Union[CommandSpec, _Mapping]] = ..., override: _Optional[bool] = ..., handler: _Optional[_Union[HandlerBinding, _Mapping]] = ..., allowed_roles: _Optional[_Iterable[_Union[ParticipantRole, str]]] = ..., hidden: _Optional[bool] = ..., replace_access: _Optional[bool] = ..., prompt: _Optional[_Union[PromptBinding, _Mapping]] = ...) -> None: ...

class RegisterResponse(_message.Message):
    __slots__ = ("outcome", "revision")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    outcome: RegisterOutcome
    revision: int
    def __init__(self, outcome: _Optional[_Union[RegisterOutcome, str]] = ..., revision: _Optional[int] = ...) -> None: ...

class UnregisterRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class UnregisterResponse(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class ListSpecsRequest(_message.Message):
    __slots__ = ("include_card_extension", "known_revision")
    INCLUDE_CARD_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    KNOWN_REVISION_FIELD_NUMBER: _ClassVar[int]
    include_card_extension: bool
    known_revision: int
    def __init__(self, include_card_extension: _Optional[bool] = ..., known_revision: _Optional[int] = ...) -> None: ...

class WatchSpecsRequest(_message.Message):
    __slots__ = ("include_card_extension",)
    INCLUDE_CARD_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    include_card_extension: bool
    def __init__(self, include_card_extension: _Optional[bool] = ...) -> None: ...

class ListSpecsResponse(_message.Message):
    __slots__ = ("commands", "revision", "card_params_json", "card_extension_json", "card_extension", "unchanged")
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CARD_PARAMS_JSON_FIELD_NUMBER: _ClassVar[int]
    CARD_EXTENSION_JSON_FIELD_NUMBER: _ClassVar[int]
    CARD_EXTENSION_FIELD_NUMBER: _ClassVar[int]
    UNCHANGED_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[RegisteredCommand]
    revision: int
    card_params_json: str
    card_extension_json: str
    card_extension: _a2a_pb2.AgentExtension
    unchanged: bool
    def __init__(self, commands: _Optional[_Iterable[_Union[RegisteredCommand, _Mapping]]] = ..., revision: _Optional[int] = ..., card_params_json: _Optional[str] = ..., card_extension_json: _Optional[str] = ..., card_extension: _Optional[_Union[_a2a_pb2.AgentExtension, _Mapping]] = ..., unchanged: _Optional[bool] = ...) -> None: ...

class ClassifyRequest(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _a2a_pb2.Message
    def __init__(self, message: _Optional[_Union[_a2a_pb2.Message, _Mapping]] = ...) -> None: ...

class Ordinary(_message.Message):
    __slots__ = ("reason", "name")
    REASON_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    reason: OrdinaryReason
    name: str
    def __init__(self, reason: _Optional[_Union[OrdinaryReason, str]] = ..., name: _Optional[str] = ...) -> None: ...

class Command(_message.Message):
    __slots__ = ("name", "arguments")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments: str
    def __init__(self, name: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class ClassifyResponse(_message.Message):
    __slots__ = ("command", "ordinary", "revision")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ORDINARY_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    command: Command
    ordinary: Ordinary
    revision: int
    def __init__(self, command: _Optional[_Union[Command, _Mapping]] = ..., ordinary: _Optional[_Union[Ordinary, _Mapping]] = ..., revision: _Optional[int] = ...) -> None: ...

class Sender(_message.Message):
    __slots__ = ("id", "role")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    id: str
    role: ParticipantRole
    def __init__(self, id: _Optional[str] = ..., role: _Optional[_Union[ParticipantRole, str]] = ...) -> None: ...

class TaskSettings(_message.Message):
    __slots__ = ("model", "effort")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    EFFORT_FIELD_NUMBER: _ClassVar[int]
    model: str
    effort: str
    def __init__(self, model: _Optional[str] = ..., effort: _Optional[str] = ...) -> None: ...

class PlanProgress(_message.Message):
    __slots__ = ("steps_done", "steps_total")
    STEPS_DONE_FIELD_NUMBER: _ClassVar[int]
    STEPS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    steps_done: int
    steps_total: int
    def __init__(self, steps_done: _Optional[int] = ..., steps_total: _Optional[int] = ...) -> None: ...

class SubTaskSnapshot(_message.Message):
    __slots__ = ("id", "state")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    id: str
    state: _a2a_pb2.TaskState
    def __init__(self, id: _Optional[str] = ..., state: _Optional[_Union[_a2a_pb2.TaskState, str]] = ...) -> None: ...

class TaskSnapshot(_message.Message):
    __slots__ = ("id", "context_id", "name", "state", "sub_state", "settings", "plan", "sub_tasks")
    ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUB_STATE_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    SUB_TASKS_FIELD_NUMBER: _ClassVar[int]
    id: str
    context_id: str
    name: str
    state: _a2a_pb2.TaskState
    sub_state: SubState
    settings: TaskSettings
    plan: PlanProgress
    sub_tasks: _containers.RepeatedCompositeFieldContainer[SubTaskSnapshot]
    def __init__(self, id: _Optional[str] = ..., context_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[_a2a_pb2.TaskState, str]] = ..., sub_state: _Optional[_Union[SubState, str]] = ..., settings: _Optional[_Union[TaskSettings, _Mapping]] = ..., plan: _Optional[_Union[PlanProgress, _Mapping]] = ..., sub_tasks: _Optional[_Iterable[_Union[SubTaskSnapshot, _Mapping]]] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("message", "task", "sender", "event_json_format", "attempt", "event_forms", "event_metadata", "accepts_prompt")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    EVENT_JSON_FORMAT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    EVENT_FORMS_FIELD_NUMBER: _ClassVar[int]
    EVENT_METADATA_FIELD_NUMBER: _ClassVar[int]
    ACCEPTS_PROMPT_FIELD_NUMBER: _ClassVar[int]
    message: _a2a_pb2.Message
    task: TaskSnapshot
    sender: Sender
    event_json_format: EventJsonFormat
    attempt: int
    event_forms: _containers.RepeatedScalarFieldContainer[EventForm]
    event_metadata: bool
    accepts_prompt: bool
    def __init__(self, message: _Optional[_Union[_a2a_pb2.Message, _Mapping]] = ..., task: _Optional[_Union[TaskSnapshot, _Mapping]] = ..., sender: _Optional[_Union[Sender, _Mapping]] = ..., event_json_format: _Optional[_Union[EventJsonFormat, str]] = ..., attempt: _Optional[int] = ..., event_forms: _Optional[_Iterable[_Union[EventForm, str]]] = ..., event_metadata: _Optional[bool] = ..., accepts_prompt: _Optional[bool] = ...) -> None: ...

class SubTaskToCreate(_message.Message):
    __slots__ = ("id", "name", "goal")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    GOAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    goal: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., goal: _Optional[str] = ...) -> None: ...

class Changes(_message.Message):
    __slots__ = ("settings", "sub_task")
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SUB_TASK_FIELD_NUMBER: _ClassVar[int]
    settings: TaskSettings
    sub_task: SubTaskToCreate
    def __init__(self, settings: _Optional[_Union[TaskSettings, _Mapping]] = ..., sub_task: _Optional[_Union[SubTaskToCreate, _Mapping]] = ...) -> None: ...

class CommandOutcome(_message.Message):
    __slots__ = ("command", "outcome", "reply", "event", "event_json", "changes")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    REPLY_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_JSON_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    command: Command
    outcome: Outcome
    reply: str
    event: _a2a_pb2.TaskStatusUpdateEvent
    event_json: str
    changes: Changes
    def __init__(self, command: _Optional[_Union[Command, _Mapping]] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., reply: _Optional[str] = ..., event: _Optional[_Union[_a2a_pb2.TaskStatusUpdateEvent, _Mapping]] = ..., event_json: _Optional[str] = ..., changes: _Optional[_Union[Changes, _Mapping]] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("ordinary", "command", "prompt", "revision")
    ORDINARY_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    ordinary: Ordinary
    command: CommandOutcome
    prompt: PromptExpansion
    revision: int
    def __init__(self, ordinary: _Optional[_Union[Ordinary, _Mapping]] = ..., command: _Optional[_Union[CommandOutcome, _Mapping]] = ..., prompt: _Optional[_Union[PromptExpansion, _Mapping]] = ..., revision: _Optional[int] = ...) -> None: ...

class PromptExpansion(_message.Message):
    __slots__ = ("command", "text")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    command: Command
    text: str
    def __init__(self, command: _Optional[_Union[Command, _Mapping]] = ..., text: _Optional[str] = ...) -> None: ...

class Invocation(_message.Message):
    __slots__ = ("task_id", "correlation_id", "attempt", "command", "arguments", "sender", "task", "message")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    correlation_id: str
    attempt: int
    command: str
    arguments: str
    sender: Sender
    task: TaskSnapshot
    message: _a2a_pb2.Message
    def __init__(self, task_id: _Optional[str] = ..., correlation_id: _Optional[str] = ..., attempt: _Optional[int] = ..., command: _Optional[str] = ..., arguments: _Optional[str] = ..., sender: _Optional[_Union[Sender, _Mapping]] = ..., task: _Optional[_Union[TaskSnapshot, _Mapping]] = ..., message: _Optional[_Union[_a2a_pb2.Message, _Mapping]] = ...) -> None: ...

class HandlerResult(_message.Message):
    __slots__ = ("reply", "abort")
    REPLY_FIELD_NUMBER: _ClassVar[int]
    ABORT_FIELD_NUMBER: _ClassVar[int]
    reply: HandlerReply
    abort: HandlerAbort
    def __init__(self, reply: _Optional[_Union[HandlerReply, _Mapping]] = ..., abort: _Optional[_Union[HandlerAbort, _Mapping]] = ...) -> None: ...

class HandlerReply(_message.Message):
    __slots__ = ("reply", "settings", "spawn")
    REPLY_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SPAWN_FIELD_NUMBER: _ClassVar[int]
    reply: str
    settings: TaskSettings
    spawn: HandlerSpawn
    def __init__(self, reply: _Optional[str] = ..., settings: _Optional[_Union[TaskSettings, _Mapping]] = ..., spawn: _Optional[_Union[HandlerSpawn, _Mapping]] = ...) -> None: ...

class HandlerSpawn(_message.Message):
    __slots__ = ("goal",)
    GOAL_FIELD_NUMBER: _ClassVar[int]
    goal: str
    def __init__(self, goal: _Optional[str] = ...) -> None: ...

class HandlerAbort(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ("text", "task", "sender", "limit")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    text: str
    task: TaskSnapshot
    sender: Sender
    limit: int
    def __init__(self, text: _Optional[str] = ..., task: _Optional[_Union[TaskSnapshot, _Mapping]] = ..., sender: _Optional[_Union[Sender, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class Completion(_message.Message):
    __slots__ = ("value", "text", "description")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    value: str
    text: str
    description: str
    def __init__(self, value: _Optional[str] = ..., text: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ("values", "total", "has_more", "command", "revision")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    HAS_MORE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[Completion]
    total: int
    has_more: bool
    command: str
    revision: int
    def __init__(self, values: _Optional[_Iterable[_Union[Completion, _Mapping]]] = ..., total: _Optional[int] = ..., has_more: _Optional[bool] = ..., command: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...
