"""CommandsClient against the real binary: every RPC, typed errors, admin token and TLS."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import pathlib
import socket
import time

import grpc
import grpc.aio
import pytest
from a2a.types import a2a_pb2 as sdk
from conftest import Sidecar
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from a2a_commands import (
    AlreadyExistsError,
    Command,
    Handler,
    HandlerProtocol,
    CommandsClient,
    CommandsError,
    InvalidArgumentError,
    NotFoundError,
    ParticipantRole,
    PermissionDeniedError,
    UnauthenticatedError,
    UnavailableError,
    pb,
)


def _message(text: str) -> sdk.Message:
    return sdk.Message(
        message_id="m-1", context_id="c-1", task_id="t-1", role=sdk.ROLE_USER, parts=[sdk.Part(text=text)]
    )


async def test_every_rpc_and_its_errors(sidecar: Sidecar) -> None:
    async with CommandsClient(sidecar.addr) as client:
        listed = await client.list_specs(include_card_extension=True)
        assert [c.spec.name for c in listed.commands][:4] == ["model", "effort", "sub-task", "status"]
        assert listed.card_extension.uri and listed.card_extension_json
        assert (await client.list_specs(known_revision=listed.revision)).unchanged

        spec = pb.CommandSpec(name="client-test", description="A test command")
        created = await client.register(spec)
        assert created.outcome == pb.REGISTER_OUTCOME_CREATED
        assert (await client.register(spec)).outcome == pb.REGISTER_OUTCOME_UNCHANGED
        with pytest.raises(AlreadyExistsError):
            await client.register(pb.CommandSpec(name="client-test", description="Another"))
        assert (await client.list_specs(known_revision=created.revision)).unchanged

        watch = client.watch_specs()
        first = await watch.__anext__()
        assert "client-test" in [c.spec.name for c in first.commands]
        await watch.aclose()

        classified = await client.classify(_message("/client-test  a b "))
        assert (classified.command.name, classified.command.arguments) == ("client-test", "a b ")
        ordinary = await client.classify(_message("/nope"))
        assert ordinary.ordinary.reason == pb.ORDINARY_REASON_NOT_REGISTERED

        with pytest.raises(InvalidArgumentError) as bad:
            await client.register(pb.CommandSpec(name="Deploy", description="x"))
        assert (bad.value.code, bad.value.field) == (grpc.StatusCode.INVALID_ARGUMENT, "spec.name")
        assert bad.value.reason.startswith("must match")

        task = pb.TaskSnapshot(id="t-1", context_id="c-1", state=sdk.TASK_STATE_WORKING)
        with pytest.raises(InvalidArgumentError) as no_role:
            await client.execute(_message("/model"), task, pb.Sender(id="u-1"))
        assert no_role.value.field == "sender.role"
        executed = await client.execute(
            _message("/model"), task, pb.Sender(id="u-1", role=pb.PARTICIPANT_ROLE_NONE),
            event_forms=[pb.EVENT_FORM_A2A_1_0_JSON],
        )
        assert executed.command.reply == "refused: the sender has no role on this task"
        assert executed.command.event_json and not executed.command.HasField("event")

        await client.unregister("client-test")
        with pytest.raises(NotFoundError) as missing:
            await client.unregister("client-test")
        assert isinstance(missing.value, CommandsError) and missing.value.field is None


ASSIGNEE = pb.Sender(id="u-1", role=pb.PARTICIPANT_ROLE_ASSIGNEE)
WORKING = pb.TaskSnapshot(id="t-1", context_id="c-1", state=sdk.TASK_STATE_WORKING)


async def test_complete_names_and_built_in_values(sidecar: Sidecar) -> None:
    async with CommandsClient(sidecar.addr) as client:
        names = await client.complete("/mo", ASSIGNEE)
        assert [(v.value, v.text, v.description) for v in names.values] == [
            ("model", "/model ", "Show or choose this task's model")
        ]
        assert (names.total, names.has_more, names.command) == (1, False, "")
        models = await client.complete("/model g", ASSIGNEE, task=WORKING)
        assert ([v.text for v in models.values], models.command) == (["/model gpt-x", "/model gpt-x-mini"], "model")
        assert [v.value for v in (await client.complete("/effort h", ASSIGNEE)).values] == ["high"]
        first = await client.complete("/", ASSIGNEE, limit=2)
        assert (len(first.values), first.has_more) == (2, True) and first.total >= 4
        with pytest.raises(InvalidArgumentError) as no_role:
            await client.complete("/mo", pb.Sender(id="u-1"))
        assert no_role.value.field == "sender.role"


async def test_allowed_roles_and_hidden(sidecar: Sidecar) -> None:
    admin = pb.Sender(id="u-2", role=pb.PARTICIPANT_ROLE_ADMIN)
    async with CommandsClient(sidecar.addr) as client:
        await client.register(
            pb.CommandSpec(name="cl-admin-only", description="Admins only"), allowed_roles=[ParticipantRole.ADMIN]
        )
        await client.register(pb.CommandSpec(name="cl-hidden", description="Not listed"), hidden=True)
        try:
            listed = await client.list_specs()
            commands = {c.spec.name: c for c in listed.commands}
            assert list(commands["cl-admin-only"].allowed_roles) == [pb.PARTICIPANT_ROLE_ADMIN]
            assert commands["cl-hidden"].hidden and not commands["cl-hidden"].allowed_roles
            assert "cl-admin-only" in listed.card_params_json and "cl-hidden" not in listed.card_params_json
            assert [v.value for v in (await client.complete("/cl-", admin)).values] == ["cl-admin-only"]
            assert not (await client.complete("/cl-", ASSIGNEE)).values
            refused = await client.execute(_message("/cl-admin-only now"), WORKING, ASSIGNEE)
            assert refused.command.outcome == pb.OUTCOME_REFUSED
            assert refused.command.reply == "refused: an assignee may not run /cl-admin-only"
            assert (await client.execute(_message("/cl-admin-only"), WORKING, admin)).command.outcome == (
                pb.OUTCOME_NO_HANDLER
            )
            hidden = await client.execute(_message("/cl-hidden"), WORKING, ASSIGNEE)
            assert hidden.command.reply == "command /cl-hidden has no handler"
        finally:
            await client.unregister("cl-admin-only")
            await client.unregister("cl-hidden")


class Environments(pb.CommandHandlerServicer):
    """A command handler that completes its argument from a list of environments."""

    async def Complete(self, request: pb.Invocation, context: grpc.aio.ServicerContext) -> pb.CompleteResponse:
        values = [e for e in ("staging", "production", "sandbox") if e.startswith(request.arguments)]
        described = [pb.Completion(value=v, description=f"for {request.sender.id}") for v in values]
        return pb.CompleteResponse(values=described)


async def test_complete_asks_the_handler_and_mcp_bindings_register(sidecar: Sidecar) -> None:
    server = grpc.aio.server()
    pb.add_CommandHandlerServicer_to_server(Environments(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with CommandsClient(sidecar.addr) as client:
        await client.register(
            pb.CommandSpec(name="cl-deploy", description="Deploy", argument_hint="<env>"),
            handler=pb.HandlerBinding(grpc=f"http://127.0.0.1:{port}"),
        )
        try:
            values = (await client.complete("/cl-deploy s", ASSIGNEE, task=WORKING)).values
            assert [(v.value, v.text, v.description) for v in values] == [
                ("staging", "/cl-deploy staging", "for u-1"), ("sandbox", "/cl-deploy sandbox", "for u-1")
            ]
            mcp = Handler("http://127.0.0.1:9/mcp", HandlerProtocol.MCP, timeout=2.5)
            await client.register(Command("cl-deploy", "Deploy"), handler=mcp, override=True)
            handler = {c.spec.name: c.handler for c in (await client.list_specs()).commands}["cl-deploy"]
            assert (handler.mcp, handler.timeout_ms) == ("http://127.0.0.1:9/mcp", 2500)
            secret = Handler(mcp.url, HandlerProtocol.MCP, headers={"authorization": "t"})
            with pytest.raises(InvalidArgumentError) as no_secrets_dir:  # the sidecar has no --handler-secrets-dir
                await client.register(pb.CommandSpec(name="cl-deploy", description="x"), handler=secret, override=True)
            assert no_secrets_dir.value.field == "handler.headers[0]"
        finally:
            await client.unregister("cl-deploy")
            await server.stop(None)


class Slow(pb.CommandHandlerServicer):
    """A command handler that answers after ``delay`` seconds, and counts its calls."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.calls = 0

    async def Handle(self, request: pb.Invocation, context: grpc.aio.ServicerContext) -> pb.HandlerResult:
        self.calls += 1
        await asyncio.sleep(self.delay)
        return pb.HandlerResult(reply=pb.HandlerReply(reply="late"))


async def _serve(servicer: pb.CommandHandlerServicer) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    pb.add_CommandHandlerServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"http://127.0.0.1:{port}"


async def test_execute_shortens_a_slow_handler_to_the_callers_deadline(sidecar: Sidecar) -> None:
    # A handler taking 5 s within its 10 s timeout, and a caller that waits 0.4 s: the
    # handler is called with what is left, and Execute answers the failure reply in time
    # rather than DEADLINE_EXCEEDED.
    slow = Slow(5)
    server, url = await _serve(slow)
    async with CommandsClient(sidecar.addr) as client:
        await client.register(Command("cl-slow", "Slow"), handler=Handler(url, timeout=10))
        try:
            started = time.monotonic()
            executed = await client.execute(_message("/cl-slow now"), WORKING, ASSIGNEE, timeout=0.4)
            elapsed = time.monotonic() - started
            assert executed.command.outcome == pb.OUTCOME_FAILED, executed
            reply = executed.command.reply
            assert reply.startswith("/cl-slow failed: timed out after") and "caller's deadline" in reply, reply
            assert elapsed < 3, elapsed  # loose: well before the handler's 5 s
            assert slow.calls == 1
        finally:
            await client.unregister("cl-slow")
            await server.stop(None)


async def test_execute_with_less_than_the_minimum_left_does_not_call_the_handler(tmp_path: pathlib.Path) -> None:
    slow = Slow(0)
    server, url = await _serve(slow)
    sidecar = Sidecar(tmp_path / "data", "--handler-min-time-left-ms", "200").start()
    try:
        async with CommandsClient(sidecar.addr) as client:
            await client.register(Command("cl-slow", "Slow"), handler=Handler(url, timeout=10))
            executed = await client.execute(_message("/cl-slow now"), WORKING, ASSIGNEE, timeout=0.15)
            assert executed.command.outcome == pb.OUTCOME_FAILED, executed
            reply = executed.command.reply
            assert reply.startswith("/cl-slow failed: not called:") and "the minimum is 200 ms" in reply, reply
            assert slow.calls == 0, "never called"
            # With enough time left the same command runs.
            executed = await client.execute(_message("/cl-slow now"), WORKING, ASSIGNEE, timeout=5)
            assert (executed.command.reply, slow.calls) == ("late", 1)
    finally:
        sidecar.stop()
        await server.stop(None)


async def test_unreachable_service_is_unavailable() -> None:
    # A port that refuses connections: bound, never listened on, held for the test.
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{unused.getsockname()[1]}"
        async with CommandsClient(address) as client:
            with pytest.raises(UnavailableError):
                await client.list_specs()
        with pytest.raises(CommandsError) as closed:
            await client.list_specs()
        assert closed.value.code == grpc.StatusCode.CANCELLED


async def test_admin_token(tmp_path: pathlib.Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    sidecar = Sidecar(tmp_path / "data", "--admin-token-file", str(token)).start()
    spec = pb.CommandSpec(name="guarded", description="Needs the token")
    try:
        async with CommandsClient(sidecar.addr) as anonymous:
            with pytest.raises(UnauthenticatedError):
                await anonymous.register(spec)
            assert (await anonymous.list_specs()).revision  # reads need no token
        async with CommandsClient(sidecar.addr, admin_token="wrong") as wrong:
            with pytest.raises(PermissionDeniedError):
                await wrong.register(spec)
        async with CommandsClient(sidecar.addr, admin_token=lambda: token.read_text().strip()) as admin:
            assert (await admin.register(spec)).outcome == pb.REGISTER_OUTCOME_CREATED
            await admin.unregister("guarded")
    finally:
        sidecar.stop()


async def test_tls_and_mtls(tmp_path: pathlib.Path) -> None:
    ca_key, ca = _certificate("test CA", None, None)
    server_key, server = _certificate("127.0.0.1", ca_key, ca)
    client_key, client = _certificate("gateway", ca_key, ca)
    files = {}
    for name, value in [("ca.pem", _pem(ca)), ("server.pem", _pem(server)), ("server.key", _pem(server_key))]:
        files[name] = tmp_path / name
        files[name].write_bytes(value)
    sidecar = Sidecar(
        tmp_path / "data", "--tls-cert", str(files["server.pem"]), "--tls-key", str(files["server.key"]),
        "--tls-client-ca", str(files["ca.pem"]),
    ).start()
    try:
        async with CommandsClient(
            sidecar.addr, root_certificates=_pem(ca), private_key=_pem(client_key), certificate_chain=_pem(client)
        ) as mtls:
            assert (await mtls.list_specs()).revision
        async with CommandsClient(sidecar.addr, root_certificates=_pem(ca)) as no_client_cert:
            with pytest.raises(CommandsError):
                await no_client_cert.list_specs()
    finally:
        sidecar.stop()


def _certificate(
    name: str, issuer_key: ec.EllipticCurvePrivateKey | None, issuer: x509.Certificate | None
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject if issuer else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if name == "127.0.0.1":
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(name))])
        builder = builder.add_extension(san, critical=False)
    return key, builder.sign(issuer_key or key, hashes.SHA256())


def _pem(item: x509.Certificate | ec.EllipticCurvePrivateKey) -> bytes:
    if isinstance(item, x509.Certificate):
        return item.public_bytes(serialization.Encoding.PEM)
    return item.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
