"""The async client of the a2a-commands gRPC API (``a2a.commands.v1.CommandService``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar, cast

import grpc
import grpc.aio
from a2a.types import a2a_pb2 as sdk

from ._pb import a2a_pb2 as ours
from ._pb import commands_pb2 as pb
from ._pb import commands_pb2_grpc as pb_grpc
from ._trace import trace_metadata
from .address import address_from_env, parse_address
from .commands import Command, Handler, McpPrompt, prompt_binding
from .convert import message_to_commands
from .errors import CommandsError

R = TypeVar("R")

DEFAULT_TIMEOUT = 40.0
"""Seconds a unary call may take: more than the sidecar's default --handler-max-timeout-ms (30 s)."""

NO_HANDLER_DEADLINE = 5.0
"""Seconds Execute may take for a command whose body runs no handler (docs/kit-contract.md, section 5)."""

HANDLER_DEADLINE_MARGIN = 5.0
"""Seconds Execute's deadline adds to a handler's (or an MCP prompt's) own timeout."""


def execute_deadline(registry: pb.ListSpecsResponse | None, name: str | None) -> float:
    """Execute's deadline in seconds for the command ``name``, from the registry last seen.

    :data:`NO_HANDLER_DEADLINE` for a command whose body runs no handler, a handler's or
    an MCP prompt's timeout plus :data:`HANDLER_DEADLINE_MARGIN`, and
    :data:`DEFAULT_TIMEOUT` for a name not seen (or none, or no registry yet). So a sidecar
    that stops answering gives the fallback reply within seconds, while a slow handler
    still has all its time (``docs/vectors/deadlines.json``).
    """
    known = _known_deadline(registry, name)
    return DEFAULT_TIMEOUT if known is None else known


def _known_deadline(registry: pb.ListSpecsResponse | None, name: str | None) -> float | None:
    """:func:`execute_deadline` where the registry says; ``None`` for the default."""
    command = None
    if registry is not None and name is not None:
        command = next((c for c in registry.commands if c.spec.name == name), None)
    if command is None:
        return None
    no_handler = (pb.COMMAND_BODY_BUILTIN, pb.COMMAND_BODY_NONE)
    template = command.body == pb.COMMAND_BODY_PROMPT and command.prompt.WhichOneof("source") == "template"
    if command.body in no_handler or template:
        return NO_HANDLER_DEADLINE
    if command.body == pb.COMMAND_BODY_HANDLER:
        timeout_ms = command.handler.timeout_ms
    elif command.body == pb.COMMAND_BODY_PROMPT and command.prompt.WhichOneof("source") == "mcp":
        timeout_ms = command.prompt.mcp.timeout_ms
    else:  # a body this kit does not know may run anywhere
        return None
    return timeout_ms / 1000 + HANDLER_DEADLINE_MARGIN if timeout_ms > 0 else None


# A sidecar on loopback comes back within seconds; grpc's default (up to 120 s between
# attempts) would keep commands failing long after it has.
_CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
    # A sidecar that stops answering (a frozen node) is noticed by a ping left unanswered,
    # and the connection is redialled rather than waited on.
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
)


class CommandsClient:
    """Calls every RPC of the a2a-commands service, raising :class:`CommandsError` subclasses.

    The channel is opened on first use, so the client may be built at import time and
    used from the event loop that serves the gateway (one loop per client).

    Args:
        target: The service: ``http://host:port``, ``https://host:port`` (TLS with the
            system's roots unless given others below) or ``host:port``; default
            ``$A2A_COMMANDS_ADDR`` in the same forms, else ``http://127.0.0.1:50051``
            (the service's default ``--listen``). ``ValueError`` if it is neither.
        admin_token: Sent as ``authorization: Bearer <token>`` with Register and
            Unregister (the service's ``--admin-token-file``); a callable is asked on
            every call, so a rotated secret takes effect at once.
        tls: Connect over TLS with the system's roots (implied by the next three).
        root_certificates: PEM roots that sign the service's certificate.
        private_key: PEM client key, for mTLS (``--tls-client-ca``).
        certificate_chain: PEM client certificate chain, for mTLS.
        credentials: Full control: channel credentials to use instead of the above.
        timeout: Deadline of each unary call in seconds (``None``: none). Execute waits
            for command handlers, which may take up to the service's
            ``--handler-max-timeout-ms``.
        channel_options: Extra gRPC channel options, after the kit's own.
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        admin_token: str | Callable[[], str] | None = None,
        tls: bool = False,
        root_certificates: bytes | None = None,
        private_key: bytes | None = None,
        certificate_chain: bytes | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        channel_options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        address = parse_address(target) if target else address_from_env()
        self.target = address.target
        self.timeout = timeout
        self._admin_token = admin_token
        if credentials is None and (address.tls or tls or root_certificates or private_key or certificate_chain):
            credentials = grpc.ssl_channel_credentials(root_certificates, private_key, certificate_chain)
        self._credentials = credentials
        self._options = (*_CHANNEL_OPTIONS, *channel_options)
        self._channel: grpc.aio.Channel | None = None
        self._stub: Any = None
        self._closed = False
        # The registry last seen (ListSpecs, WatchSpecs), for Execute's deadlines.
        self._registry: pb.ListSpecsResponse | None = None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (calls then raise :class:`CommandsError`)."""
        return self._closed

    @property
    def channel(self) -> grpc.aio.Channel:
        """The gRPC channel, opened on first use."""
        if self._closed:
            raise CommandsError("the client is closed", code=grpc.StatusCode.CANCELLED)
        if self._channel is None:
            if self._credentials is None:
                self._channel = grpc.aio.insecure_channel(self.target, options=self._options)
            else:
                self._channel = grpc.aio.secure_channel(self.target, self._credentials, options=self._options)
            self._stub = pb_grpc.CommandServiceStub(self._channel)  # type: ignore[no-untyped-call]
        return self._channel

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Waits until the channel is connected (for example at start, or after a restart)."""
        try:
            await asyncio.wait_for(self.channel.channel_ready(), timeout)
        except asyncio.TimeoutError:
            raise CommandsError(
                f"{self.target} not ready after {timeout} s", code=grpc.StatusCode.UNAVAILABLE
            ) from None

    async def register(
        self,
        command: Command | pb.CommandSpec,
        *,
        override: bool = False,
        handler: Handler | pb.HandlerBinding | None = None,
        allowed_roles: Iterable[int] = (),
        hidden: bool = False,
        prompt: str | McpPrompt | pb.PromptBinding | None = None,
    ) -> pb.RegisterResponse:
        """Adds ``command`` at the end of the order (or replaces it in place with ``override``).

        Args:
            command: The command as the card shows it (:class:`~a2a_commands.Command`).
            override: Replace a command of the same name, keeping its place.
            handler: Where its body runs (:class:`~a2a_commands.Handler`); none: a
                built-in's own body, else "no handler".
            allowed_roles: The :class:`~a2a_commands.ParticipantRole` values that may run
                it; empty: every role. Others are refused (``refused: a <role> may not
                run /<name>``) before any body runs.
            hidden: Runs, but is left out of the card and of completion.
            prompt: Makes it a prompt command: a template (``$ARGUMENTS``, ``$1``...``$9``,
                ``{{args}}``) or an MCP server's prompt (:class:`~a2a_commands.McpPrompt`).
                Execute then answers the expansion, which the executor sends to the agent.
                A command has a handler or a prompt, never both.
        """
        spec = command.to_proto() if isinstance(command, Command) else command
        binding = handler.to_proto() if isinstance(handler, Handler) else handler
        request = pb.RegisterRequest(
            spec=spec, override=override, handler=binding,
            allowed_roles=cast("list[pb.ParticipantRole]", [int(r) for r in allowed_roles]), hidden=hidden,
            prompt=prompt_binding(prompt),
        )
        return await self._unary("Register", request, pb.RegisterResponse, admin=True)

    async def unregister(self, name: str) -> pb.UnregisterResponse:
        """Removes the command ``name``."""
        return await self._unary("Unregister", pb.UnregisterRequest(name=name), pb.UnregisterResponse, admin=True)

    async def list_specs(
        self, *, include_card_extension: bool = False, known_revision: int | None = None
    ) -> pb.ListSpecsResponse:
        """The commands in order, the revision and the card entry (or ``unchanged``)."""
        request = pb.ListSpecsRequest(
            include_card_extension=include_card_extension, known_revision=known_revision
        )
        return self._seen(await self._unary("ListSpecs", request, pb.ListSpecsResponse))

    def execute_deadline(self, name: str | None) -> float | None:
        """Execute's deadline for the command ``name``, from the registry this client last
        saw (through ``list_specs`` or ``watch_specs``, as the card helper calls them): see
        :func:`execute_deadline`, with this client's own ``timeout`` where the registry
        does not say. The executor asks it for every command."""
        known = _known_deadline(self._registry, name)
        return self.timeout if known is None else known

    def _seen(self, state: pb.ListSpecsResponse) -> pb.ListSpecsResponse:
        """Keeps ``state`` as the registry last seen (an ``unchanged`` answer holds no commands)."""
        # Never back to an older registry (the card's first listing can arrive after a
        # newer WatchSpecs state).
        if not state.unchanged and (self._registry is None or state.revision >= self._registry.revision):
            self._registry = state
        return state

    async def watch_specs(self, *, include_card_extension: bool = False) -> AsyncIterator[pb.ListSpecsResponse]:
        """The registry's current state, then its state after every change (no deadline)."""
        self.channel  # noqa: B018 (opens the channel)
        call = self._stub.WatchSpecs(
            pb.WatchSpecsRequest(include_card_extension=include_card_extension), metadata=trace_metadata()
        )
        try:
            async for response in call:
                yield self._seen(response)
        except grpc.aio.AioRpcError as error:
            raise CommandsError.from_rpc_error(error) from None
        finally:
            call.cancel()

    async def classify(self, message: sdk.Message | ours.Message) -> pb.ClassifyResponse:
        """Whether ``message`` (a2a-sdk's or ours) is a command, which, with what arguments."""
        return await self._unary("Classify", pb.ClassifyRequest(message=_ours(message)), pb.ClassifyResponse)

    async def execute(
        self,
        message: sdk.Message | ours.Message,
        task: pb.TaskSnapshot,
        sender: pb.Sender,
        *,
        attempt: int = 0,
        event_forms: Iterable[pb.EventForm] = (),
        event_metadata: bool = False,
        timeout: float | None | Literal["default"] = "default",
        accepts_prompt: bool = False,
    ) -> pb.ExecuteResponse:
        """Runs ``message`` if it is a command; see ``ExecuteRequest`` for the options.
        ``timeout`` overrides the client's deadline for this call (the executor passes
        :meth:`execute_deadline`). ``accepts_prompt``: the caller sends a prompt
        command's expansion to the agent (the executor does); without it, a prompt
        command answers a failure rather than a ``prompt`` result."""
        request = pb.ExecuteRequest(
            message=_ours(message), task=task, sender=sender, attempt=attempt,
            event_forms=list(event_forms), event_metadata=event_metadata, accepts_prompt=accepts_prompt,
        )
        return await self._unary("Execute", request, pb.ExecuteResponse, timeout=timeout)

    async def complete(
        self, text: str, sender: pb.Sender, *, task: pb.TaskSnapshot | None = None, limit: int = 0
    ) -> pb.CompleteResponse:
        """Suggestions for what a user has typed so far (MCP ``completion/complete``'s shape).

        ``/mo`` completes command names (hidden ones, and those ``sender`` may not run,
        left out); ``/model g`` and ``/effort h`` the built-ins' values; ``/<name> ...``
        of a handler command what the handler suggests (none if it fails or is slow).

        Args:
            text: The text typed so far, from its first character.
            sender: Who is typing; its ``role`` is required (else
                :class:`InvalidArgumentError` naming ``sender.role``).
            task: The task typed into, passed on to handlers (checked as Execute checks it).
            limit: The most values to return; 0 means 10, at most 100.

        Returns:
            ``values`` (each ``value``, ``text`` with it applied, ``description``),
            ``total``, ``has_more``, the ``command`` completed (empty for names) and the
            registry ``revision``.
        """
        request = pb.CompleteRequest(text=text, task=task, sender=sender, limit=limit)
        return await self._unary("Complete", request, pb.CompleteResponse)

    async def close(self) -> None:
        """Closes the channel for good; calls in flight are cancelled."""
        self._closed = True
        if self._channel is not None:
            await self._channel.close()
            self._channel = None

    async def __aenter__(self) -> CommandsClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _unary(
        self,
        method: str,
        request: Any,
        response: type[R],
        *,
        admin: bool = False,
        timeout: float | None | Literal["default"] = "default",
    ) -> R:
        self.channel  # noqa: B018 (opens the channel)
        metadata = trace_metadata()
        token = self._admin_token() if callable(self._admin_token) else self._admin_token
        if admin and token:
            metadata += (("authorization", f"Bearer {token}"),)
        try:
            deadline = self.timeout if timeout == "default" else timeout
            answer = await getattr(self._stub, method)(request, timeout=deadline, metadata=metadata)
        except grpc.aio.AioRpcError as error:
            raise CommandsError.from_rpc_error(error) from None
        return cast(R, answer)


def _ours(message: sdk.Message | ours.Message) -> ours.Message:
    return message if isinstance(message, ours.Message) else message_to_commands(message)
