"""A command to register, and where its body runs, in plain Python types.

``CommandsClient.register(Command(...), handler=Handler(...), allowed_roles=[...])``;
the generated ``pb.CommandSpec`` and ``pb.HandlerBinding`` stay inside (they are still
accepted).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from ._pb import commands_pb2 as pb


@dataclass(frozen=True)
class McpPrompt:
    """A prompt command's prompt from an MCP server (``prompts/get`` at each Execute).

    Args:
        url: The MCP server (streamable HTTP).
        name: The prompt's name there.
        timeout: Seconds Execute waits for it; ``None``: the sidecar's default (5 s).
    """

    url: str
    name: str
    timeout: float | None = None

    def to_proto(self) -> pb.PromptBinding:
        timeout_ms = round(self.timeout * 1000) if self.timeout is not None else 0
        return pb.PromptBinding(mcp=pb.McpPrompt(url=self.url, name=self.name, timeout_ms=timeout_ms))


def prompt_binding(prompt: str | McpPrompt | pb.PromptBinding | None) -> pb.PromptBinding | None:
    """A prompt as Register takes it: a template's text, an :class:`McpPrompt`, or the proto."""
    if prompt is None or isinstance(prompt, pb.PromptBinding):
        return prompt
    if isinstance(prompt, McpPrompt):
        return prompt.to_proto()
    return pb.PromptBinding(template=prompt)


@dataclass(frozen=True)
class Command:
    """A command as the agent card shows it: ``/<name> <argument_hint>``, ``description``."""

    name: str
    description: str
    argument_hint: str = ""

    def to_proto(self) -> pb.CommandSpec:
        return pb.CommandSpec(name=self.name, description=self.description, argument_hint=self.argument_hint)


class HandlerProtocol(enum.Enum):
    """What a handler's endpoint speaks."""

    GRPC = "grpc"
    """The ``CommandHandler`` gRPC service (``http://`` or ``https://`` base URL)."""
    JSON_RPC = "json_rpc"
    """JSON-RPC 2.0 POSTs of ``command.invoked.in``, as the reference harness posts them."""
    MCP = "mcp"
    """An MCP server (streamable HTTP) with the tool ``hooks.command.invoked.in``."""


@dataclass(frozen=True)
class Handler:
    """Where a command's body runs.

    Args:
        url: The endpoint.
        protocol: What it speaks (default gRPC).
        timeout: Seconds Execute waits for it; ``None``: the sidecar's default (5 s).
        headers: Header name to the file, under the sidecar's ``--handler-secrets-dir``,
            holding its value (read at each call; never logged nor listed).
    """

    url: str
    protocol: HandlerProtocol = HandlerProtocol.GRPC
    timeout: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def to_proto(self) -> pb.HandlerBinding:
        binding = pb.HandlerBinding(
            timeout_ms=round(self.timeout * 1000) if self.timeout is not None else 0,
            headers=[pb.HandlerHeader(name=name, value_file=path) for name, path in self.headers.items()],
        )
        setattr(binding, self.protocol.value, self.url)
        return binding
