"""The front: the sidecar in front of a plain a2a-sdk echo agent (no kit, no change),
driven by a2a-sdk's own client over JSON-RPC and HTTP+JSON, streaming and not.
Commands are answered by the front; everything else reaches the agent untouched."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    ROLE_USER,
    TASK_STATE_CANCELED,
    TASK_STATE_INPUT_REQUIRED,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    Message,
    Part,
    SendMessageRequest,
    Task,
)
from google.protobuf import json_format

from conftest import health_status, start_server_line
from front_agent import Agent

EXTENSION = "https://madarauchiha-314.github.io/tiny-harness/a2a/ext/commands/v1"
BINDINGS = ["JSONRPC", "HTTP+JSON"]


@pytest.fixture(scope="module")
def agent():
    running = Agent()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def front(tmp_path_factory, agent):
    proc, serving = start_server_line(
        tmp_path_factory.mktemp("front"),
        "--front-upstream", agent.url,
        "--front-listen", "127.0.0.1:0",
        "--front-default-role", "assignee",
        "--metrics-listen", "127.0.0.1:0",
    )
    yield proc, serving
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def front_url(front) -> str:
    return f"http://{front[1]['front_addr']}"


class Session:
    """One a2a-sdk client of the front, on one binding, streaming or not."""

    def __init__(self, url: str, binding: str, streaming: bool):
        self.url, self.binding, self.streaming = url, binding, streaming

    async def __aenter__(self):
        self.http = httpx.AsyncClient(timeout=30)
        config = ClientConfig(streaming=self.streaming, httpx_client=self.http,
                              supported_protocol_bindings=[self.binding])
        self.client = await create_client(self.url, config)
        return self

    async def __aexit__(self, *exc):
        await self.client.close()
        await self.http.aclose()

    async def send(self, text: str, task_id: str = "", context_id: str = ""):
        message = Message(message_id=str(uuid.uuid4()), role=ROLE_USER, parts=[Part(text=text)],
                          task_id=task_id, context_id=context_id)
        events = []
        async for response in self.client.send_message(SendMessageRequest(message=message)):
            kind = response.WhichOneof("payload")
            events.append((kind, getattr(response, kind)))
        return events


def last_status(events):
    kind, last = events[-1]
    status = last.status
    task_id = last.id if isinstance(last, Task) else last.task_id
    text = "\n".join(p.text for p in status.message.parts)
    return task_id, last.context_id, status.state, text, json_format.MessageToDict(status.message.metadata)


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_card_is_the_agent_s_with_the_commands_and_the_front_s_urls(front, agent):
    url = front_url(front)
    card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=30).json()
    assert card["name"] == "echo"
    entry = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION]
    assert len(entry) == 1 and entry[0]["required"] is False
    names = [c["name"] for c in entry[0]["params"]["commands"]]
    assert names[:4] == ["model", "effort", "sub-task", "status"]
    urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
    assert urls == {"JSONRPC": url, "HTTP+JSON": f"{url}/rest"}


def test_the_card_carries_its_etag_and_is_revalidated(front):
    """The merged card has an ETag (of its content), a Last-Modified and max-age=0: a
    client revalidates it each time (the commands on it change with the registry), and
    a matching If-None-Match gets 304 with no body."""
    url = f"{front_url(front)}/.well-known/agent-card.json"
    first = httpx.get(url, timeout=30)
    etag = first.headers["etag"]
    assert etag.startswith('W/"') and "max-age=0" in first.headers["cache-control"]
    assert first.headers["last-modified"].endswith("GMT")
    again = httpx.get(url, timeout=30)
    assert again.headers["etag"] == etag and again.headers["last-modified"] == first.headers["last-modified"]
    cached = httpx.get(url, headers={"If-None-Match": etag}, timeout=30)
    assert cached.status_code == 304 and cached.content == b"" and cached.headers["etag"] == etag
    assert httpx.get(url, headers={"If-None-Match": 'W/"other"'}, timeout=30).status_code == 200


def test_the_card_follows_the_registry_at_the_next_request(front, stubs):
    """The card is made once per change (and served as those bytes until the next): a
    command registered is on the card the next request gets, under a new ETag, and
    unregistered it is gone and the ETag is the old one again."""
    import grpc
    _, commands_pb2, commands_pb2_grpc = stubs
    url = f"{front_url(front)}/.well-known/agent-card.json"

    def commands(answer):
        entry = [e for e in answer.json()["capabilities"]["extensions"] if e["uri"] == EXTENSION]
        return [c["name"] for c in entry[0]["params"]["commands"]]

    before = httpx.get(url, timeout=30)
    assert httpx.get(url, timeout=30).content == before.content
    channel = grpc.insecure_channel(front[1]["addr"])
    api = commands_pb2_grpc.CommandServiceStub(channel)
    api.Register(commands_pb2.RegisterRequest(
        spec=commands_pb2.CommandSpec(name="card-follows", description="On the card next"),
        prompt=commands_pb2.PromptBinding(template="x"),
    ))
    try:
        after = httpx.get(url, timeout=30)
        assert commands(after)[-1] == "card-follows"
        assert after.headers["etag"] != before.headers["etag"]
        assert httpx.get(url, headers={"If-None-Match": before.headers["etag"]}, timeout=30).status_code == 200
    finally:
        api.Unregister(commands_pb2.UnregisterRequest(name="card-follows"))
        channel.close()
    again = httpx.get(url, timeout=30)
    assert "card-follows" not in commands(again)
    assert again.headers["etag"] == before.headers["etag"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_extended_card_is_merged_as_the_card_is(front, binding):
    async def go():
        async with Session(front_url(front), binding, False) as session:
            card = await session.client.get_extended_agent_card(GetExtendedAgentCardRequest())
            card = json_format.MessageToDict(card)
            assert "secret" in [s["id"] for s in card["skills"]], "the agent's extended card"
            entry = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION]
            assert len(entry) == 1
            assert [c["name"] for c in entry[0]["params"]["commands"]][:4] == ["model", "effort", "sub-task", "status"]
            url = front_url(front)
            urls = {i["protocolBinding"]: i["url"] for i in card["supportedInterfaces"]}
            assert urls == {"JSONRPC": url, "HTTP+JSON": f"{url}/rest"}
    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_plain_message_reaches_the_agent_untouched(front, agent, binding, streaming):
    async def go():
        async with Session(front_url(front), binding, streaming) as session:
            events = await session.send(f"hello {binding} {streaming}")
            _, _, state, text, _ = last_status(events)
            assert state == TASK_STATE_INPUT_REQUIRED
            assert text.startswith(f"echo: hello {binding} {streaming}")
    run(go())
    assert f"hello {binding} {streaming}" in agent.echo.seen


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_status_as_a_first_message_is_answered_by_the_front(front, agent, binding, streaming):
    seen_before = list(agent.echo.seen)

    async def go():
        async with Session(front_url(front), binding, streaming) as session:
            events = await session.send("/status")
            task_id, context_id, state, text, metadata = last_status(events)
            assert state == TASK_STATE_INPUT_REQUIRED
            assert "State: INPUT_REQUIRED · awaiting-next-message" in text, text
            assert metadata == {"command": "status"}
            # The task the front made is there to read.
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.id == task_id and task.context_id == context_id
            assert task.status.state == TASK_STATE_INPUT_REQUIRED
    run(go())
    assert agent.echo.seen == seen_before, "the command never reached the agent"


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_command_on_the_agent_s_task_keeps_its_state_and_settings_stick(front, agent, binding):
    async def go():
        async with Session(front_url(front), binding, False) as session:
            events = await session.send("start")
            task_id, context_id, state, _, _ = last_status(events)
            events = await session.send("/model gpt-x-mini", task_id, context_id)
            got_id, _, state, text, metadata = last_status(events)
            assert got_id == task_id and state == TASK_STATE_INPUT_REQUIRED
            assert metadata == {"command": "model"}
            events = await session.send("/status", task_id, context_id)
            _, _, _, text, _ = last_status(events)
            assert "gpt-x-mini" in text, text
            # The agent's task, read through the front, shows the data the front keeps.
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            data = json_format.MessageToDict(task.metadata)["a2a-commands"]
            assert data["settings"] == {"model": "gpt-x-mini"}, data
            # A plain message on it reaches the agent with the settings chosen, under the
            # extension's URI, and the task that comes back shows the data.
            events = await session.send(f"after model {binding}", task_id, context_id)
            assert agent.echo.metadata[-1][EXTENSION] == {"settings": {"model": "gpt-x-mini"}}
            kind, answered = events[-1]
            assert kind == "task" and answered.id == task_id, events
            data = json_format.MessageToDict(answered.metadata)["a2a-commands"]
            assert data["settings"] == {"model": "gpt-x-mini"}, data
    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_subscription_to_the_agent_s_task_shows_the_task_data(front, binding):
    async def go():
        async with Session(front_url(front), binding, True) as session:
            events = await session.send("start")
            task_id, context_id, _, _, _ = last_status(events)
            await session.send("/effort low", task_id, context_id)
            # The agent keeps the stream open (its task waits for a message): the first
            # event is the task, with the data the front keeps.
            async for response in session.client.subscribe(SubscribeToTaskRequest(id=task_id)):
                assert response.WhichOneof("payload") == "task" and response.task.id == task_id
                data = json_format.MessageToDict(response.task.metadata)["a2a-commands"]
                assert data["settings"] == {"effort": "low"}, data
                break
    run(go())


def test_an_unregistered_command_is_an_ordinary_message(front, agent):
    async def go():
        async with Session(front_url(front), "JSONRPC", False) as session:
            events = await session.send("/nonsense here")
            _, _, _, text, _ = last_status(events)
            assert text.startswith("echo: /nonsense here")
    run(go())


def test_a_prompt_command_reaches_the_agent_as_its_expansion(front, agent, stubs):
    import grpc
    _, commands_pb2, commands_pb2_grpc = stubs
    channel = grpc.insecure_channel(front[1]["addr"])
    api = commands_pb2_grpc.CommandServiceStub(channel)
    api.Register(commands_pb2.RegisterRequest(
        spec=commands_pb2.CommandSpec(name="review", description="Review", argument_hint="<file>"),
        prompt=commands_pb2.PromptBinding(template="Please review $ARGUMENTS carefully."),
    ))
    channel.close()

    async def go():
        async with Session(front_url(front), "JSONRPC", False) as session:
            events = await session.send("/review main.rs")
            _, _, _, text, _ = last_status(events)
            assert text.startswith("echo: Please review main.rs carefully."), text
            sent = agent.echo.metadata[-1]
            assert sent["command"] == "review" and sent["originalText"] == "/review main.rs"
    run(go())


def test_the_extension_is_echoed_when_a_client_activates_it(front):
    url = front_url(front)
    answer = httpx.get(f"{url}/.well-known/agent-card.json", headers={"A2A-Extensions": EXTENSION}, timeout=30)
    assert EXTENSION in answer.headers.get("a2a-extensions", "")
    plain = httpx.get(f"{url}/.well-known/agent-card.json", timeout=30)
    assert "a2a-extensions" not in plain.headers


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_a_task_the_front_made_goes_on_under_its_id_at_the_agent(front, agent, binding, streaming):
    async def go():
        async with Session(front_url(front), binding, streaming) as session:
            events = await session.send("/model gpt-x-mini")
            task_id, context_id, _, _, _ = last_status(events)
            assert task_id.startswith("front-")
            # The next plain message reaches the agent, which makes its own task; the
            # client goes on seeing the front's id, in every answer and event.
            events = await session.send(f"next {binding} {streaming}", task_id, context_id)
            for kind, event in events:
                assert (event.id if isinstance(event, Task) else event.task_id) == task_id, events
            got_id, _, state, text, _ = last_status(events)
            assert got_id == task_id and state == TASK_STATE_INPUT_REQUIRED
            assert text.startswith(f"echo: next {binding} {streaming}")
            # The agent was sent the task's chosen settings under the extension's URI.
            assert agent.echo.metadata[-1][EXTENSION] == {"settings": {"model": "gpt-x-mini"}}
            # And again: the same task at the agent.
            events = await session.send("again", task_id, context_id)
            assert last_status(events)[0] == task_id
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.id == task_id
            data = json_format.MessageToDict(task.metadata)["a2a-commands"]
            assert data["settings"] == {"model": "gpt-x-mini"}
            assert "subState" not in data, "the awaited message ended the wait"
            history = [m.parts[0].text for m in task.history]
            assert f"next {binding} {streaming}" in history and "again" in history
            # Listed by the agent, it is listed under the front's id, with its data.
            listed = await session.client.list_tasks(ListTasksRequest(context_id=context_id))
            assert [t.id for t in listed.tasks] == [task_id], listed
            data = json_format.MessageToDict(listed.tasks[0].metadata)["a2a-commands"]
            assert data["settings"] == {"model": "gpt-x-mini"}
            # A command on it now reads the agent's task, and keeps its id.
            events = await session.send("/status", task_id, context_id)
            got_id, _, _, text, _ = last_status(events)
            assert got_id == task_id and "gpt-x-mini" in text, text
    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_task_only_the_front_holds_is_listed_on_the_first_page(front, binding):
    """A command as a new task's first message makes a task the agent has never seen:
    ListTasks lists it anyway (first page, filters applied), under the front's id."""
    async def go():
        async with Session(front_url(front), binding, False) as session:
            task_id, context_id, _, _, _ = last_status(await session.send("/model gpt-x"))
            listed = await session.client.list_tasks(ListTasksRequest(context_id=context_id))
            assert [t.id for t in listed.tasks] == [task_id], listed
            assert listed.total_size >= 1
            assert listed.tasks[0].status.state == TASK_STATE_INPUT_REQUIRED
            data = json_format.MessageToDict(listed.tasks[0].metadata)["a2a-commands"]
            assert data["settings"] == {"model": "gpt-x"}
            # Unfiltered, it is there; with another context or state, it is not.
            everything = await session.client.list_tasks(ListTasksRequest())
            assert task_id in [t.id for t in everything.tasks]
            other = await session.client.list_tasks(ListTasksRequest(context_id=str(uuid.uuid4())))
            assert task_id not in [t.id for t in other.tasks]
            canceled = await session.client.list_tasks(
                ListTasksRequest(context_id=context_id, status=TASK_STATE_CANCELED))
            assert [t.id for t in canceled.tasks] == []
            # Once a message reached the agent, the agent lists it, still under the
            # front's id, and only once.
            await session.send("now at the agent", task_id, context_id)
            listed = await session.client.list_tasks(ListTasksRequest(context_id=context_id))
            assert [t.id for t in listed.tasks] == [task_id], listed
    run(go())


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_front_s_tasks_outlive_a_killed_sidecar(tmp_path, agent, binding):
    """The front's records are in the store: a task it made, and the agent's id it was
    joined to, are acknowledged only once durable, so a sidecar killed (SIGKILL) and
    started again on the same data directory goes on answering them."""
    data = tmp_path / "data"

    def started():
        return start_server_line(data, "--front-upstream", agent.url, "--front-listen", "127.0.0.1:0",
                                 "--front-default-role", "assignee")

    async def in_session(serving, steps):
        async with Session(f"http://{serving['front_addr']}", binding, False) as session:
            return await steps(session)

    proc, serving = started()

    async def made(session):
        events = await session.send("/model gpt-x-mini")
        return last_status(events)[:2]
    task_id, context_id = run(in_session(serving, made))
    proc.kill()
    proc.wait(timeout=30)

    proc, serving = started()
    try:
        async def after_restart(session):
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.id == task_id and task.status.state == TASK_STATE_INPUT_REQUIRED
            data = json_format.MessageToDict(task.metadata)["a2a-commands"]
            assert data.get("settings") == {"model": "gpt-x-mini"}, (data, task)
            # The next message joins it to a task at the agent.
            events = await session.send(f"after restart {binding}", task_id, context_id)
            assert last_status(events)[0] == task_id
        run(in_session(serving, after_restart))
    finally:
        proc.kill()
        proc.wait(timeout=30)

    proc, serving = started()
    try:
        async def joined(session):
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.id == task_id
            assert f"after restart {binding}" in [m.parts[0].text for m in task.history]
        run(in_session(serving, joined))
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_task_the_front_made_is_subscribed_to_and_canceled_there(front, binding):
    async def go():
        async with Session(front_url(front), binding, True) as session:
            events = await session.send("/status")
            task_id = last_status(events)[0]
            # It waits for its next message: a subscription sees it, then ends.
            seen = [r async for r in session.client.subscribe(SubscribeToTaskRequest(id=task_id))]
            assert [r.WhichOneof("payload") for r in seen] == ["task"]
            assert seen[0].task.id == task_id
            assert seen[0].task.status.state == TASK_STATE_INPUT_REQUIRED
            canceled = await session.client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.id == task_id and canceled.status.state == TASK_STATE_CANCELED
            task = await session.client.get_task(GetTaskRequest(id=task_id))
            assert task.status.state == TASK_STATE_CANCELED
            with pytest.raises(Exception) as refused:
                await session.client.cancel_task(CancelTaskRequest(id=task_id))
            assert "cancel" in str(refused.value).lower()
    run(go())


def verify_jws(signature: dict, payload: bytes, public, alg: str) -> None:
    """Checks a detached JWS (A2A's AgentCardSignature) over `payload`."""
    import base64
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, utils

    def b64(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    def unb64(text: str) -> bytes:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    signed = signature["protected"].encode() + b"." + b64(payload)
    raw = unb64(signature["signature"])
    if alg == "ES256":
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public.verify(der, signed, ec.ECDSA(hashes.SHA256()))
    elif alg == "RS256":
        public.verify(raw, signed, padding.PKCS1v15(), hashes.SHA256())
    else:
        public.verify(raw, signed)


def test_the_front_closes_idle_connections_and_speaks_http2(tmp_path, agent):
    """The front's connections have the API listener's limits: one with no request in
    flight for --idle-timeout-seconds is closed. HTTP/2 (prior knowledge) is served too."""
    import socket

    proc, serving = start_server_line(tmp_path, "--front-upstream", agent.url, "--front-listen", "127.0.0.1:0",
                                      "--idle-timeout-seconds", "1")
    try:
        host, port = serving["front_addr"].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sock.sendall(f"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            seen = b""
            while b"\r\n\r\n" not in seen:
                seen += sock.recv(65536)
            assert seen.startswith(b"HTTP/1.1 200"), seen[:100]
            # Keep-alive, then nothing: the front ends the connection (a bound of 30 s
            # guards the test, the closing is what it waits on).
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
        with httpx.Client(http1=False, http2=True, timeout=30) as client:
            answer = client.get(f"http://{serving['front_addr']}/.well-known/agent-card.json")
            assert answer.http_version == "HTTP/2" and answer.json()["name"] == "echo"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("kind", ["ec", "ed25519", "rsa"])
def test_with_a_signing_key_the_merged_card_is_signed_and_a2a_sdk_verifies_it(tmp_path, agent, kind):
    """The card a2a-sdk's own verifier accepts: parsed into its types, canonicalized as
    it does, checked against the public key it is given for the front's kid."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from a2a.types.a2a_pb2 import AgentCard
    from a2a.utils.signing import InvalidSignaturesError, create_signature_verifier

    private = {"ec": lambda: ec.generate_private_key(ec.SECP256R1()),
               "ed25519": ed25519.Ed25519PrivateKey.generate,
               "rsa": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)}[kind]()
    alg = {"ec": "ES256", "ed25519": "EdDSA", "rsa": "RS256"}[kind]
    key_file = tmp_path / "card-key.pem"
    key_file.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                               serialization.NoEncryption()))
    public = private.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo)
    proc, serving = start_server_line(tmp_path / "data", "--front-upstream", agent.url, "--front-listen",
                                      "127.0.0.1:0", "--front-signing-key-file", str(key_file),
                                      "--front-signing-key-id", "front-key-1")
    try:
        raw = httpx.get(f"http://{serving['front_addr']}/.well-known/agent-card.json", timeout=30).json()
        assert len(raw["signatures"]) == 1
        card = json_format.ParseDict(raw, AgentCard(), ignore_unknown_fields=True)
        asked = []

        def key_provider(kid, jku):
            asked.append(kid)
            return public
        create_signature_verifier(key_provider, [alg])(card)
        assert asked == ["front-key-1"]
        # And by RFC 8785 alone, over exactly the JSON served, less `signatures` (its
        # keys are ASCII and its numbers integers, where JCS is sorted compact JSON).
        served = {k: v for k, v in raw.items() if k != "signatures"}
        payload = json.dumps(served, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        verify_jws(raw["signatures"][0], payload.encode(), private.public_key(), alg)
        # A card changed after signing no longer verifies.
        card.name = "not the signed card"
        with pytest.raises(InvalidSignaturesError):
            create_signature_verifier(key_provider, [alg])(card)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_commands_complete_is_answered_by_the_front_as_the_kits_answer_it(front):
    url = front_url(front)

    def complete(params, **headers):
        body = {"jsonrpc": "2.0", "id": 7, "method": "commands/complete", "params": params}
        return httpx.post(url, json=body, headers={"A2A-Version": "1.0", **headers}, timeout=30)

    names = complete({"text": "/mo"}, **{"A2A-Extensions": EXTENSION})
    assert names.headers.get("a2a-extensions") == EXTENSION
    result = names.json()["result"]
    assert result["command"] == "" and result["values"][0] == {
        "value": "model", "text": "/model ", "description": result["values"][0]["description"]}
    values = complete({"text": "/model gpt-x-m", "limit": 5}).json()["result"]
    assert values["command"] == "model" and [v["text"] for v in values["values"]] == ["/model gpt-x-mini"]
    # In a task the front made, and in one the agent does not have.
    made = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m-c", "role": "ROLE_USER", "parts": [{"text": "/status"}]}}},
        headers={"A2A-Version": "1.0"}, timeout=30).json()["result"]["task"]["id"]
    assert complete({"text": "/eff", "taskId": made}).json()["result"]["values"][0]["value"] == "effort"
    assert complete({"text": "/eff", "taskId": "no-such-task"}).json()["error"]["code"] == -32001
    assert complete({"text": 3}).json()["error"]["code"] == -32602
    assert complete({"text": "/model", "limit": -1}).json()["error"]["code"] == -32602


def test_requests_are_counted_by_binding_method_and_result(front):
    async def go():
        async with Session(front_url(front), "JSONRPC", False) as session:
            await session.send("/status")
            await session.send("plain")
    run(go())
    scrape = httpx.get(f"http://{front[1]['metrics_addr']}/metrics", timeout=30).text

    def count(labels):
        for line in scrape.splitlines():
            if line.startswith(f"a2a_commands_front_requests_total{{{labels}}}"):
                return float(line.rsplit(" ", 1)[1])
        return 0.0
    assert count('binding="jsonrpc",method="SendMessage",result="answered"') >= 1, scrape
    assert count('binding="jsonrpc",method="SendMessage",result="passed"') >= 1, scrape
    assert count('binding="other",method="card",result="answered"') >= 1, scrape
    assert "a2a_commands_front_upstream_duration_seconds_count" in scrape


def test_the_front_is_ready_on_health_once_it_has_a_card(front):
    deadline = time.monotonic() + 30
    while health_status(front[1]["health_addr"], "a2a.commands.v1.Front") != 1:
        assert time.monotonic() < deadline, "the front never turned SERVING"
        time.sleep(0.05)


def test_with_the_agent_down_commands_still_answer_and_the_rest_fails_naming_it(tmp_path, refused_port):
    port = refused_port
    proc, serving = start_server_line(
        tmp_path, "--front-upstream", f"http://127.0.0.1:{port}", "--front-listen", "127.0.0.1:0",
        "--front-timeout-ms", "2000",
    )
    try:
        url = f"http://{serving['front_addr']}"
        card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=30)
        assert card.status_code == 503 and f"127.0.0.1:{port}" in card.text, card.text
        assert health_status(serving["health_addr"], "a2a.commands.v1.Front") == 2
        rpc = {"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {
            "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}}
        plain = httpx.post(url, json=rpc, headers={"A2A-Version": "1.0"}, timeout=30)
        assert plain.status_code == 502, plain.text
        assert plain.json()["error"]["message"].find(f"127.0.0.1:{port}") >= 0
        rest = httpx.post(f"{url}/message:send", json=rpc["params"], timeout=30)
        assert rest.status_code == 502 and f"127.0.0.1:{port}" in rest.text
        rpc["params"]["message"]["parts"] = [{"text": "/status"}]
        # Without A2A-Version (0.3) the front does not answer in 1.0: the agent is asked.
        unversioned = httpx.post(url, json=rpc, timeout=30)
        assert unversioned.status_code == 502, unversioned.text
        command = httpx.post(url, json=rpc, headers={"A2A-Version": "1.0"}, timeout=30)
        assert command.status_code == 200, command.text
        task = command.json()["result"]["task"]
        assert task["status"]["message"]["metadata"] == {"command": "status"}
        big = httpx.post(url, content=b"x" * (5 << 20), headers={"content-type": "application/json"}, timeout=30)
        # A body over the limit is the client's fault, said in its own status on every
        # binding (JSON-RPC's error object with it).
        assert big.status_code == 413 and "over the front's limit" in big.json()["error"]["message"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


class RawAgent:
    """An HTTP/1.1 agent written by hand, for what an SDK agent will not do on demand:
    a stream whose next event waits for the client to have the first (so an event the
    front held back would stall it), and a stream cut off mid-way."""

    def __init__(self, cut: bool):
        import socket
        import threading
        self.cut = cut
        self.got_first = threading.Event()
        self.finished = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        import threading
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
        request = b""
        while b"\r\n\r\n" not in request:
            request += conn.recv(65536)
        head, _, body = request.partition(b"\r\n\r\n")
        if not head.startswith(b"POST"):  # the front's card fetch: there is none
            conn.sendall(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            conn.close()
            return
        length = int(next(l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")))
        while len(body) < length:
            body += conn.recv(65536)

        def chunk(data: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(data), data)
        event = lambda n: f'data: {{"statusUpdate": {{"taskId": "t-1", "contextId": "c-1", "status": {{"state": "TASK_STATE_WORKING", "message": {{"messageId": "e-{n}", "role": "ROLE_AGENT", "parts": [{{"text": "event {n}"}}]}}}}}}}}\n\n'.encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        conn.sendall(chunk(event(1)))
        if self.cut:
            conn.close()  # mid-stream, without the last chunk
            return
        if self.got_first.wait(30):
            conn.sendall(chunk(event(2)))
        conn.sendall(b"0\r\n\r\n")
        self.finished.set()
        conn.close()


def start_front(tmp_path, upstream):
    return start_server_line(tmp_path, "--front-upstream", upstream, "--front-listen", "127.0.0.1:0")


def test_a_stream_passes_through_event_by_event(tmp_path):
    raw = RawAgent(cut=False)
    proc, serving = start_front(tmp_path, raw.url)
    try:
        body = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "go"}]}}
        events = []
        with httpx.stream("POST", f"http://{serving['front_addr']}/message:stream", json=body, timeout=60) as answer:
            for line in answer.iter_lines():
                if line.startswith("data:"):
                    events.append(line)
                    # The agent sends its second event only once we have the first: a
                    # front that held events back would never get it sent.
                    raw.got_first.set()
        assert [e.count("event") for e in events] == [1, 1] and "event 2" in events[1], events
        assert raw.finished.wait(30)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_agent_cut_off_mid_stream_ends_the_client_s_stream_with_an_error(tmp_path):
    raw = RawAgent(cut=True)
    proc, serving = start_front(tmp_path, raw.url)
    try:
        body = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "go"}]}}
        seen = []
        with pytest.raises(httpx.HTTPError):
            with httpx.stream("POST", f"http://{serving['front_addr']}/message:stream", json=body, timeout=30) as answer:
                for line in answer.iter_lines():
                    seen.append(line)
        assert any("event 1" in line for line in seen), seen
    finally:
        proc.terminate()
        proc.wait(timeout=30)
