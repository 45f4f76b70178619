"""The agent's card verified before the front vouches for it (issue 63, point 8): with
`--front-card-jwks-file`, a card is taken only when one of its signatures, made by
a2a-sdk's own card signer, verifies with a key of the set. A card that does not is
refused (fail closed): the last verified card is served, or none (503), counted in
`a2a_commands_front_cards_unverified_total`."""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface
from a2a.utils.signing import create_agent_card_signer
from cryptography.hazmat.primitives.asymmetric import ed25519
from cryptography.hazmat.primitives import serialization
from google.protobuf import json_format

from conftest import start_server_line


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class Key:
    """An Ed25519 key, its JWK (kid `kid`) and a2a-sdk's card signer for it."""

    def __init__(self, kid: str):
        self.kid = kid
        self.private = ed25519.Ed25519PrivateKey.generate()
        raw = self.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw), "kid": kid, "use": "sig"}
        pem = self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption())
        self.sign = create_agent_card_signer(pem, {"alg": "EdDSA", "kid": kid, "typ": "JOSE"})


class CardAgent:
    """An agent that serves the card it is given (swapped during a test), on 127.0.0.1."""

    def __init__(self):
        self.card: dict = {}
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps(agent.card).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("cache-control", "max-age=0")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def serve(self, name: str, key: Key | None) -> None:
        card = AgentCard(name=name, description="a card", version="1.0",
                         supported_interfaces=[AgentInterface(url=self.url, protocol_binding="JSONRPC",
                                                              protocol_version="1.0")],
                         capabilities=AgentCapabilities(streaming=False),
                         default_input_modes=["text/plain"], default_output_modes=["text/plain"])
        if key:
            card = key.sign(card)
        self.card = json_format.MessageToDict(card)

    def stop(self):
        self.server.shutdown()


def unverified(serving) -> float:
    scrape = httpx.get(f"http://{serving['metrics_addr']}/metrics", timeout=30).text
    for line in scrape.splitlines():
        if line.startswith("a2a_commands_front_cards_unverified_total "):
            return float(line.split()[1])
    return 0.0


def until(condition, seconds: float = 30) -> bool:
    """Polls `condition` until it holds (or `seconds` pass); whether it held."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def start_front(tmp_path, agent: CardAgent, keys: list[Key]):
    jwks = tmp_path / "card-keys.json"
    jwks.write_text(json.dumps({"keys": [k.jwk for k in keys]}))
    return start_server_line(tmp_path / "data", "--front-upstream", agent.url, "--front-listen", "127.0.0.1:0",
                             "--front-card-jwks-file", str(jwks), "--front-card-refresh-seconds", "1",
                             "--metrics-listen", "127.0.0.1:0")


def test_a_card_signed_by_the_set_is_served_and_one_that_is_not_never_is(tmp_path):
    trusted, stranger = Key("agent-1"), Key("stranger")
    agent = CardAgent()
    agent.serve("signed-card", trusted)
    proc, serving = start_front(tmp_path, agent, [trusted])
    card_url = f"http://{serving['front_addr']}/.well-known/agent-card.json"
    try:
        served = httpx.get(card_url, timeout=30)
        assert served.status_code == 200 and served.json()["name"] == "signed-card", served.text
        # The agent's card changes to one signed by a key the set does not hold, then to
        # one not signed at all: each refused, the card last verified served meanwhile.
        for name, key in [("stranger-card", stranger), ("unsigned-card", None)]:
            before = unverified(serving)
            agent.serve(name, key)
            served = []
            assert until(lambda: served.append(httpx.get(card_url, timeout=30)) or unverified(serving) > before)
            assert all(s.status_code == 200 and s.json()["name"] == "signed-card" for s in served), served[-1].text
            assert httpx.get(card_url, timeout=30).json()["name"] == "signed-card"
        # Signed by the set's key again: taken.
        agent.serve("signed-again", trusted)
        assert until(lambda: httpx.get(card_url, timeout=30).json()["name"] == "signed-again")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        agent.stop()


def test_with_no_verified_card_yet_nothing_is_served(tmp_path):
    agent = CardAgent()
    agent.serve("stranger-card", Key("stranger"))
    proc, serving = start_front(tmp_path, agent, [Key("agent-1")])
    try:
        answer = httpx.get(f"http://{serving['front_addr']}/.well-known/agent-card.json", timeout=30)
        assert answer.status_code == 503, answer.text
        assert "stranger-card" not in answer.text
        assert unverified(serving) >= 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        agent.stop()
