"""Verified callers (issue 44, point 3): the front reads the sender's id and role from a
JWT in `Authorization`, verified against a JWK set (a file, or a URL) with keys this
test makes; a token that does not verify gets a 401 on either binding and never reaches
the agent; no token gets the default role, or a 401 when one is required. No token or
claim value is ever written to the log."""

from __future__ import annotations

import base64
import http.server
import json
import pathlib
import subprocess
import threading
import time
import uuid

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from conftest import _binary
from front_agent import Agent

ISSUER = "https://issuer.example.test"
AUDIENCE = "a2a-commands-front"
SECRET_EMAIL = "ada.lovelace@example.test"


def b64url(number: int, size: int) -> str:
    return base64.urlsafe_b64encode(number.to_bytes(size, "big")).rstrip(b"=").decode()


class Keys:
    """An RSA and an EC P-256 key, and their public JWK set."""

    def __init__(self, prefix: str):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.rsa_kid, self.ec_kid = f"{prefix}-rsa", f"{prefix}-ec"

    def jwks(self) -> dict:
        n = self.rsa.public_key().public_numbers()
        p = self.ec.public_key().public_numbers()
        return {"keys": [
            {"kty": "RSA", "kid": self.rsa_kid, "use": "sig", "alg": "RS256",
             "n": b64url(n.n, 256), "e": b64url(n.e, 3)},
            {"kty": "EC", "kid": self.ec_kid, "crv": "P-256", "x": b64url(p.x, 32), "y": b64url(p.y, 32)},
        ]}

    def token(self, kind: str = "rsa", **claims) -> str:
        body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "user-1", "email": SECRET_EMAIL,
                "exp": int(time.time()) + 600, **claims}
        if kind == "rsa":
            return jwt.encode(body, self.rsa, algorithm="RS256", headers={"kid": self.rsa_kid})
        return jwt.encode(body, self.ec, algorithm="ES256", headers={"kid": self.ec_kid})


class Front:
    """The sidecar with its front on, its log kept in a file to read afterwards."""

    def __init__(self, tmp: pathlib.Path, upstream: str, *flags: str):
        self.log = tmp / "serve.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [_binary(), "serve", "--listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0",
                 "--log-format", "json",
                 "--data-dir", str(tmp / "data"), "--front-upstream", upstream,
                 "--front-listen", "127.0.0.1:0", "--front-default-role", "watcher",
                 "--front-jwt-issuer", ISSUER, "--front-jwt-audience", AUDIENCE, *flags],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + 60  # a bound against a hang; readiness is the line
        while True:
            serving = [json.loads(line) for line in self.log.read_text().splitlines()
                       if '"serving"' in line]
            if serving:
                self.url = f"http://{serving[0]['front_addr']}"
                return
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.05)

    def stop(self) -> str:
        self.proc.terminate()
        assert self.proc.wait(timeout=30) == 0
        return self.log.read_text()

    def send(self, text: str, token: str | None = None, binding: str = "JSONRPC") -> httpx.Response:
        headers = {"A2A-Version": "1.0"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
        if binding == "JSONRPC":
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
            return httpx.post(self.url, json=body, headers=headers, timeout=30)
        return httpx.post(f"{self.url}/rest/message:send", json={"message": message}, headers=headers,
                          timeout=30)


def reply(answer: httpx.Response) -> str:
    body = answer.json()
    task = body["result"]["task"] if "result" in body else body["task"]
    return task["status"]["message"]["parts"][0]["text"]


@pytest.fixture(scope="module")
def agent():
    running = Agent()
    yield running
    running.stop()


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_token_s_role_decides_and_a_bad_token_never_reaches_the_agent(tmp_path, agent, binding):
    keys = Keys("one")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keys.jwks()))
    front = Front(tmp_path, agent.url, "--front-jwt-jwks-file", str(jwks),
                  "--front-jwt-sender-claim", "email")
    tokens = [keys.token(role="assignee"), keys.token("ec", role=["reporter"])]
    try:
        # No token: the default role (a watcher may not change the model).
        assert reply(front.send("/model gpt-x", binding=binding)) == \
            "refused: a watcher may not change the task with /model"
        # A verified token's role claim decides, RSA or EC.
        for token in tokens:
            answer = reply(front.send("/model gpt-x", token, binding))
            assert not answer.startswith("refused"), answer
        # A watcher's token: refused as a watcher.
        assert reply(front.send("/model gpt-x", keys.token(role="watcher"), binding)).startswith("refused")
        # Tokens that do not verify: 401, and nothing reaches the agent, command or not.
        seen = len(agent.echo.seen)
        bad = [keys.token(aud="someone-else"), keys.token(iss="https://else.test"),
               keys.token(exp=int(time.time()) - 3600), Keys("one").token(), "not.a.token",
               jwt.encode({"iss": ISSUER, "aud": AUDIENCE, "exp": int(time.time()) + 60}, "s" * 32,
                          algorithm="HS256")]
        for token in bad:
            for text in ("/status", f"plain {uuid.uuid4()}"):
                answer = front.send(text, token, binding)
                assert answer.status_code == 401, answer.text
                assert answer.headers["www-authenticate"].startswith("Bearer")
                bad_text = answer.text
                assert token not in bad_text
        assert len(agent.echo.seen) == seen
        # A verified token on a plain message: the agent answers, as without the front.
        assert reply(front.send("hello", tokens[0], binding)).startswith("echo: hello")
        # The card stays public.
        assert httpx.get(f"{front.url}/.well-known/agent-card.json", timeout=30).status_code == 200
    finally:
        log = front.stop()
    for token in tokens + bad:
        assert token not in log
    assert SECRET_EMAIL not in log


def test_a_required_token_refuses_a_request_without_one(tmp_path, agent):
    keys = Keys("req")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(keys.jwks()))
    front = Front(tmp_path, agent.url, "--front-jwt-jwks-file", str(jwks), "--front-jwt-required")
    try:
        answer = front.send("/status")
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
        assert "required" in answer.json()["error"]["message"]
        assert front.send("/status", keys.token(role="admin")).status_code == 200
        assert httpx.get(f"{front.url}/.well-known/agent-card.json", timeout=30).status_code == 200
        # On the gRPC binding too: UNAUTHENTICATED, before anything is forwarded.
        import grpc
        from a2a.types import a2a_pb2, a2a_pb2_grpc
        with grpc.insecure_channel(front.url.removeprefix("http://")) as channel:
            request = a2a_pb2.SendMessageRequest(message=a2a_pb2.Message(
                message_id="m-1", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="/status")]))
            with pytest.raises(grpc.RpcError) as refused:
                a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(request, timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert "required" in refused.value.details()
    finally:
        front.stop()


def test_a_rotated_key_set_file_is_read_again(tmp_path, agent):
    old, new = Keys("old"), Keys("new")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(old.jwks()))
    front = Front(tmp_path, agent.url, "--front-jwt-jwks-file", str(jwks))
    try:
        assert front.send("/status", old.token()).status_code == 200
        assert front.send("/status", new.token()).status_code == 401
        jwks.write_text(json.dumps(new.jwks()))
        # The file is looked at again at most once a second: wait for the new key.
        deadline = time.monotonic() + 30
        while front.send("/status", new.token()).status_code != 200:
            assert time.monotonic() < deadline, "the new key set was never read"
            time.sleep(0.2)
        assert front.send("/status", old.token()).status_code == 401
    finally:
        front.stop()


def test_a_key_set_url_is_fetched(tmp_path, agent):
    keys = Keys("url")
    document = json.dumps(keys.jwks()).encode()

    class Jwks(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Jwks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    front = Front(tmp_path, agent.url, "--front-jwt-jwks-url",
                  f"http://127.0.0.1:{server.server_address[1]}/jwks.json")
    try:
        answer = front.send("/model gpt-x", keys.token("ec", role="admin"))
        assert answer.status_code == 200 and not reply(answer).startswith("refused"), answer.text
        assert front.send("/status", Keys("url").token()).status_code == 401
    finally:
        front.stop()
        server.shutdown()
