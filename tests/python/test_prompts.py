"""Prompt commands end to end, from outside: registered with grpcurl, from a real MCP
server's prompts (the official `mcp` package over streamable HTTP on 127.0.0.1), and
imported by `ctl import-prompts` from a Claude Code and a Gemini CLI folder and by `ctl
import-mcp-prompts`; each expands as docs/vectors/prompts.json says."""

import json
import pathlib
import re
import shutil
import subprocess
import sys

import grpc
import pytest
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.types import Completion, ImageContent

from conftest import ROOT, _binary, serving_asgi, start_server

VECTORS = json.loads((ROOT / "docs" / "vectors" / "prompts.json").read_text())


def _prompt_server():
    """An MCP server with prompts of one, two and no arguments, one that answers an
    assistant turn, one that answers an image, and completion for `review`'s `file`."""
    server = MCPServer("prompts")

    @server.prompt(name="explain", description="Explain some code")
    def explain(code: str) -> str:
        return f"Explain this code:\n{code}"

    @server.prompt(name="review", description="Review a file\nwith care")
    def review(file: str, focus: str = "") -> list:
        lines = [UserMessage(f"Review {file}.")]
        if focus:
            lines.append(UserMessage(f"Focus on {focus}."))
        return lines

    @server.prompt(name="standup", description="Write a stand-up note")
    def standup() -> str:
        return "Write my stand-up note."

    @server.prompt(name="chatty", description="Answers as the assistant")
    def chatty() -> list:
        return [UserMessage("Hi"), AssistantMessage("Hello")]

    @server.prompt(name="picture", description="Answers an image")
    def picture() -> list:
        return [UserMessage(ImageContent(type="image", data="AAAA", mimeType="image/png"))]

    @server.completion()
    async def complete(ref, argument, context):
        if getattr(ref, "name", None) == "review" and argument.name == "file":
            files = ["src/main.rs", "src/lib.rs", "README.md"]
            return Completion(values=[f for f in files if f.startswith(argument.value)], has_more=False)
        return None

    return server.streamable_http_app()


@pytest.fixture()
def prompt_server():
    """Serves the prompts on 127.0.0.1 (a port of its own); yields its URL."""
    with serving_asgi(_prompt_server()) as url:
        yield f"{url}/mcp"


@pytest.fixture()
def sidecar(tmp_path):
    proc, addr = start_server(tmp_path / "data")
    yield addr
    proc.terminate()
    assert proc.wait(timeout=30) == 0


def _execute(stubs, client, text):
    ours, commands, _ = stubs
    message = ours.Message(message_id="m-1", context_id="c-1", task_id="t-1")
    message.parts.add(text=text)
    task = commands.TaskSnapshot(id="t-1", context_id="c-1", state=ours.TASK_STATE_WORKING)
    request = commands.ExecuteRequest(
        message=message, task=task, accepts_prompt=True,  # a gateway that runs prompt commands
        sender=commands.Sender(id="u-1", role=commands.PARTICIPANT_ROLE_ASSIGNEE))
    return client.Execute(request, timeout=30)


def _expansion(stubs, client, text):
    answer = _execute(stubs, client, text)
    assert answer.WhichOneof("result") == "prompt", answer
    return answer.prompt.text


def _reply(stubs, client, text):
    answer = _execute(stubs, client, text)
    assert answer.WhichOneof("result") == "command", answer
    return answer.command.outcome, answer.command.reply


def _ctl(addr, *args):
    return subprocess.run([_binary(), "ctl", "--addr", addr, *args], capture_output=True, text=True,
                          timeout=60)


def test_mcp_prompts_expand_refuse_fail_and_complete(stubs, sidecar, prompt_server):
    _, commands, commands_grpc = stubs
    with grpc.insecure_channel(sidecar) as channel:
        client = commands_grpc.CommandServiceStub(channel)
        for name in ("explain", "review", "standup", "chatty", "picture"):
            client.Register(commands.RegisterRequest(
                spec=commands.CommandSpec(name=name, description=f"The {name} prompt"),
                prompt=commands.PromptBinding(mcp=commands.McpPrompt(url=prompt_server, name=name,
                                                                      timeout_ms=10000))),
                timeout=10)

        # One argument takes the whole text; several take it word by word.
        assert _expansion(stubs, client, "/explain fn main() { }") == "Explain this code:\nfn main() { }"
        assert _expansion(stubs, client, '/review a.rs "error handling"') == \
            "Review a.rs.\n\nFocus on error handling."
        assert _expansion(stubs, client, "/review a.rs") == "Review a.rs."
        # No declared argument: the typed text after a blank line.
        assert _expansion(stubs, client, "/standup and blockers") == \
            "Write my stand-up note.\n\nand blockers"
        # A required argument missing: the usage.
        assert _reply(stubs, client, "/review") == (commands.OUTCOME_REFUSED,
                                                   "refused: usage: /review <file> [<focus>]")
        # What a prompt command cannot send fails, naming it.
        assert _reply(stubs, client, "/chatty") == (
            commands.OUTCOME_FAILED, "/chatty failed: the prompt returned an assistant message, not user text")
        assert _reply(stubs, client, "/picture") == (
            commands.OUTCOME_FAILED, "/picture failed: the prompt returned an image, not user text")

        # Completion asks the server's completion/complete with ref/prompt.
        sender = commands.Sender(id="u-1", role=commands.PARTICIPANT_ROLE_ASSIGNEE)
        answer = client.Complete(commands.CompleteRequest(text="/review src/", sender=sender), timeout=10)
        assert [v.text for v in answer.values] == ["/review src/main.rs", "/review src/lib.rs"]
        assert answer.command == "review"


def test_mcp_prompts_imported_by_ctl(stubs, sidecar, prompt_server):
    _, commands, commands_grpc = stubs
    done = _ctl(sidecar, "import-mcp-prompts", prompt_server)
    assert done.returncode == 0, done.stderr
    with grpc.insecure_channel(sidecar) as channel:
        client = commands_grpc.CommandServiceStub(channel)
        listed = {c.spec.name: c for c in client.ListSpecs(commands.ListSpecsRequest(), timeout=10).commands}
        review = listed["review"]
        assert review.body == commands.COMMAND_BODY_PROMPT
        assert (review.prompt.mcp.url, review.prompt.mcp.name) == (prompt_server, "review")
        assert review.spec.description == "Review a file"  # its first line
        assert review.spec.argument_hint == "<file> [<focus>]"
        assert _expansion(stubs, client, "/explain x") == "Explain this code:\nx"


@pytest.mark.skipif(shutil.which("grpcurl") is None, reason="grpcurl is not installed")
def test_a_template_registered_with_grpcurl(stubs, sidecar):
    """As an operator does it: grpcurl with reflection, JSON in, the vectors' expansion out."""
    _, _, commands_grpc = stubs
    case = next(c for c in VECTORS["templates"] if c.get("note", "").startswith("positional"))
    body = json.dumps({"spec": {"name": "fix", "description": "Fix an issue"},
                       "prompt": {"template": case["template"]}})
    done = subprocess.run(["grpcurl", "-plaintext", "-d", body, sidecar,
                           "a2a.commands.v1.CommandService/Register"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    with grpc.insecure_channel(sidecar) as channel:
        client = commands_grpc.CommandServiceStub(channel)
        assert _expansion(stubs, client, f"/fix {case['arguments']}") == case["expansion"]


def test_claude_code_and_gemini_cli_folders_imported_by_ctl(stubs, sidecar, tmp_path):
    _, _, commands_grpc = stubs
    claude = tmp_path / "project" / ".claude" / "commands"
    (claude / "frontend").mkdir(parents=True)
    (claude / "review.md").write_text(
        "---\ndescription: Review code\nargument-hint: [file] [focus]\n---\nReview $1, focusing on $2.\n")
    (claude / "frontend" / "component.md").write_text("Create a component named $ARGUMENTS.\n")
    (claude / "status.md").write_text("---\ndescription: Git status\n---\nStatus: !`git status`\n")
    (claude / "Bad_Name.md").write_text("Anything.\n")
    gemini = tmp_path / "project" / ".gemini" / "commands"
    (gemini / "git").mkdir(parents=True)
    (gemini / "git" / "commit.toml").write_text(
        'description = "Write a commit message"\nprompt = """Write a commit message for: {{args}}"""\n')
    (gemini / "plan.toml").write_text('prompt = "Plan the work."\n')
    (gemini / "diff.toml").write_text('prompt = "Review this diff: !{git diff --staged}"\n')
    (gemini / "read.toml").write_text('prompt = "Summarize @{docs/README.md}"\n')
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2\n")
    (gemini / "leak.md").symlink_to(secret)
    (tmp_path / "project" / "docs").mkdir()
    (tmp_path / "project" / "docs" / "guide.md").write_text("Not a command.\n")

    # A folder with neither tool's commands is refused whole.
    done = _ctl(sidecar, "import-prompts", str(tmp_path / "project" / "docs"))
    assert done.returncode != 0 and "no .claude/commands or .gemini/commands" in done.stderr, done.stderr

    # Written as a commands file first: no server needed, and serve accepts it.
    out = tmp_path / "commands.json"
    done = _ctl(sidecar, "import-prompts", str(tmp_path / "project"), "--output", str(out))
    assert done.returncode != 0, "refused files make it fail, after writing the rest"
    refused = done.stderr
    assert "status.md: refused: it uses \"!`git status`\"" in refused, refused
    assert "diff.toml: refused: it uses \"!{git diff --staged}\"" in refused, refused
    assert "read.toml: refused: it uses \"@{docs/README.md}\"" in refused, refused
    assert "Bad_Name.md: skipped" in refused, refused
    assert "leak.md: refused: a symbolic link" in refused and "hunter2" not in out.read_text(), refused
    written = json.loads(out.read_text())["commands"]
    assert [c["name"] for c in written] == ["frontend-component", "git-commit", "plan", "review"]
    check = subprocess.run([_binary(), "ctl", "check", str(out)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr

    # Registered on the running sidecar.
    done = _ctl(sidecar, "import-prompts", str(tmp_path / "project"))
    assert "frontend-component: created" in done.stdout, done.stdout
    with grpc.insecure_channel(sidecar) as channel:
        client = commands_grpc.CommandServiceStub(channel)
        assert _expansion(stubs, client, '/review main.rs "error handling"') == \
            "Review main.rs, focusing on error handling."
        assert _expansion(stubs, client, "/frontend-component Button") == "Create a component named Button."
        assert _expansion(stubs, client, "/git-commit the fix") == "Write a commit message for: the fix"
        assert _expansion(stubs, client, "/plan this week") == "Plan the work.\n\nthis week"


OLD_KIT = '''
import json, sys
import grpc
from before_accepts_prompt import a2a_pb2 as ours, commands_pb2 as commands, commands_pb2_grpc
message = ours.Message(message_id="m-1", context_id="c-1", task_id="t-1")
message.parts.add(text=sys.argv[2])
request = commands.ExecuteRequest(
    message=message, task=commands.TaskSnapshot(id="t-1", state=ours.TASK_STATE_WORKING),
    sender=commands.Sender(id="u-1", role=commands.PARTICIPANT_ROLE_ASSIGNEE))
with grpc.insecure_channel(sys.argv[1]) as channel:
    answer = commands_pb2_grpc.CommandServiceStub(channel).Execute(request, timeout=30)
print(json.dumps({"result": answer.WhichOneof("result"), "outcome": answer.command.outcome,
                  "reply": answer.command.reply}))
'''


def test_a_gateway_whose_kit_predates_prompt_commands_never_gets_one(stubs, sidecar):
    """An old client, on the generated code from before ExecuteRequest.accepts_prompt
    (before_accepts_prompt/, copied from the Python kit then), in a process of its own so
    its descriptors stand alone: a prompt command answers it a failure it understands,
    never a `prompt` result it would pass to the model as the typed text."""
    ours, commands, commands_grpc = stubs
    with grpc.insecure_channel(sidecar) as channel:
        client = commands_grpc.CommandServiceStub(channel)
        client.Register(commands.RegisterRequest(
            spec=commands.CommandSpec(name="fix", description="Fix an issue"),
            prompt=commands.PromptBinding(template="Fix issue #$1.")), timeout=30)
        assert _expansion(stubs, client, "/fix 42") == "Fix issue #42."
    here = pathlib.Path(__file__).resolve().parent
    done = subprocess.run([sys.executable, "-c", OLD_KIT, sidecar, "/fix 42"], cwd=here,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer == {"result": "command", "outcome": commands.OUTCOME_FAILED,
                      "reply": "/fix failed: this gateway cannot run prompt commands; update its a2a-commands kit"}


def test_mcp_prompts_behind_a_token_imported_with_header_files(stubs, tmp_path):
    """`ctl import-mcp-prompts --header NAME=FILE`, as a commands file's headers: the
    listing sends the token read from the file, and the commands imported carry the header
    (its file, never its value), which the sidecar reads at each Execute."""
    _, commands, commands_grpc = stubs
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "token").write_text("Bearer s3cret\n")
    app = _prompt_server()

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != b"Bearer s3cret":
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no token"})
            return
        await app(scope, receive, send)

    proc, addr = start_server(tmp_path / "data", "--handler-secrets-dir", str(secrets))
    try:
        with serving_asgi(guarded) as url:
            without = _ctl(addr, "import-mcp-prompts", f"{url}/mcp")
            assert without.returncode != 0
            done = _ctl(addr, "import-mcp-prompts", f"{url}/mcp", "--header", "authorization=token",
                        "--secrets-dir", str(secrets))
            assert done.returncode == 0, done.stderr
            with grpc.insecure_channel(addr) as channel:
                client = commands_grpc.CommandServiceStub(channel)
                listed = {c.spec.name: c for c in client.ListSpecs(commands.ListSpecsRequest(), timeout=10).commands}
                headers = [(h.name, h.value_file) for h in listed["explain"].prompt.mcp.headers]
                assert headers == [("authorization", "token")]
                assert _expansion(stubs, client, "/explain x") == "Explain this code:\nx"
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def _counting(app, methods):
    """`app`, recording the JSON-RPC method of every request it is sent."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        received, body, more = [], b"", True
        while more:
            message = await receive()
            received.append(message)
            body += message.get("body", b"")
            more = message.get("more_body", False)
        methods.extend(m.decode() for m in re.findall(rb'"method"\s*:\s*"([^"]+)"', body))

        async def replay():
            return received.pop(0) if received else await receive()

        await app(scope, replay, send)

    return wrapped


def test_an_mcp_servers_prompt_list_is_kept_and_listed_again_when_it_lacks_a_prompt(stubs, sidecar):
    """The prompt list an MCP prompt command needs is asked once, not at every Execute;
    a prompt the server added since is found at once (a list that lacks it is asked again)."""
    _, commands, commands_grpc = stubs
    server = MCPServer("changing")

    @server.prompt(name="alpha", description="The first")
    def alpha(topic: str) -> str:
        return f"Alpha on {topic}."

    methods = []
    with serving_asgi(_counting(server.streamable_http_app(), methods)) as url, \
            grpc.insecure_channel(sidecar) as channel:
        client = commands_grpc.CommandServiceStub(channel)
        for name in ("alpha", "beta"):
            client.Register(commands.RegisterRequest(
                spec=commands.CommandSpec(name=name, description=name),
                prompt=commands.PromptBinding(mcp=commands.McpPrompt(url=f"{url}/mcp", name=name))), timeout=30)
        for _ in range(3):
            assert _expansion(stubs, client, "/alpha caching") == "Alpha on caching."
        assert methods.count("prompts/get") == 3
        assert methods.count("prompts/list") == 1

        @server.prompt(name="beta", description="Added later")
        def beta(topic: str) -> str:
            return f"Beta on {topic}."

        assert _expansion(stubs, client, "/beta lists") == "Beta on lists."
        assert methods.count("prompts/list") == 2
