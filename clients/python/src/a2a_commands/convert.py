"""Conversions between a2a-sdk's protobuf types and ours.

Our ``a2a.commands.v1`` mirrors of the A2A 1.0 objects (``Message``, ``Part``,
``TaskStatus``, ``TaskStatusUpdateEvent``, ``AgentExtension``, and the ``Role`` and
``TaskState`` enums) have the field numbers and types of a2a-sdk's ``lf.a2a.v1``
(``a2a.types.a2a_pb2``), so a conversion is a serialization round trip: nothing is lost,
and fields we do not mirror travel as unknown fields. Enum values are the same numbers.
"""

from __future__ import annotations

from typing import TypeVar

from a2a.types import a2a_pb2 as sdk
from google.protobuf import json_format
from google.protobuf.message import Message as ProtoMessage

from ._pb import a2a_pb2 as ours

M = TypeVar("M", bound=ProtoMessage)


def recast(message: ProtoMessage, cls: type[M]) -> M:
    """Re-reads ``message`` as ``cls``, a type with the same field numbers."""
    return cls.FromString(message.SerializeToString())


def message_to_commands(message: sdk.Message) -> ours.Message:
    """An a2a-sdk ``Message`` as ours, for Classify and Execute."""
    return recast(message, ours.Message)


def message_from_commands(message: ours.Message) -> sdk.Message:
    """Our ``Message`` as a2a-sdk's."""
    return recast(message, sdk.Message)


def event_to_commands(event: sdk.TaskStatusUpdateEvent) -> ours.TaskStatusUpdateEvent:
    """An a2a-sdk ``TaskStatusUpdateEvent`` as ours."""
    return recast(event, ours.TaskStatusUpdateEvent)


def event_from_commands(event: ours.TaskStatusUpdateEvent) -> sdk.TaskStatusUpdateEvent:
    """Execute's reply event as a2a-sdk's, ready for its ``EventQueue``."""
    return recast(event, sdk.TaskStatusUpdateEvent)


def extension_to_commands(extension: sdk.AgentExtension) -> ours.AgentExtension:
    """An a2a-sdk ``AgentExtension`` as ours."""
    return recast(extension, ours.AgentExtension)


def extension_from_commands(extension: ours.AgentExtension) -> sdk.AgentExtension:
    """ListSpecs' ``card_extension`` as a2a-sdk's ``AgentExtension``."""
    return recast(extension, sdk.AgentExtension)


def extension_from_json(text: str) -> sdk.AgentExtension:
    """ListSpecs' ``card_extension_json`` as a2a-sdk's ``AgentExtension``."""
    return json_format.Parse(text, sdk.AgentExtension(), ignore_unknown_fields=True)
