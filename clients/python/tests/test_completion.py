"""The gateway's ``commands/complete`` JSON-RPC method, over HTTP (README: "Completion")."""

from __future__ import annotations

from typing import Any

from conftest import User, connect_user
from gateway import Gateway

from a2a_commands import EXTENSION_URI, Command, ParticipantRole
from a2a_commands.completion import COMPLETE_METHOD


async def _complete(user: User, url: str, params: Any, extensions: str | None = None) -> dict[str, Any]:
    """One JSON-RPC call of ``commands/complete`` with the user's credentials."""
    request = {"jsonrpc": "2.0", "id": "c-1", "method": COMPLETE_METHOD, "params": params}
    response = await user.http.post(url, json=request, headers={"A2A-Extensions": extensions} if extensions else {})
    assert response.status_code == 200
    assert response.headers.get("A2A-Extensions") == extensions  # echoed as activated when asked for
    body: dict[str, Any] = response.json()
    assert (body["jsonrpc"], body["id"]) == ("2.0", "c-1")
    return body


async def _values(user: User, url: str, text: str) -> list[str]:
    return [v["value"] for v in (await _complete(user, url, {"text": text}))["result"]["values"]]


async def test_completion_over_json_rpc(gateway: Gateway) -> None:
    alice = await connect_user(gateway, "alice", streaming=False)
    anonymous = await connect_user(gateway, None, streaming=False)
    await gateway.commands.register(
        Command(name="ship", description="Ship it"), allowed_roles=[ParticipantRole.ASSIGNEE], override=True
    )
    try:
        task = await alice.send("hello")  # the SDK's own methods still answer on the same URL
        names = await _complete(alice, gateway.url, {"text": "/mo", "taskId": task.task_id}, EXTENSION_URI)
        assert names["result"] == {
            "values": [{"value": "model", "text": "/model ", "description": "Show or choose this task's model"}],
            "total": 1,
            "hasMore": False,
            "command": "",
        }
        limited = {"text": "/model g", "taskId": task.task_id, "limit": 1}
        models = (await _complete(alice, gateway.url, limited))["result"]
        assert models["values"] == [{"value": "gpt-x", "text": "/model gpt-x", "description": ""}]
        assert (models["total"], models["hasMore"], models["command"]) == (2, True, "model")
        # The role comes from the executor's role callback: alice is the assignee, an
        # anonymous caller a watcher (who may not run /ship, nor change the model).
        assert await _values(alice, gateway.url, "/sh") == ["ship"]
        assert await _values(anonymous, gateway.url, "/sh") == []
        assert await _values(anonymous, gateway.url, "/model g") == []
        # Tasks are read under the caller's scope, as the SDK's GetTask reads them.
        for user, task_id in ((alice, "no-such-task"), (anonymous, task.task_id)):
            missing = await _complete(user, gateway.url, {"text": "/mo", "taskId": task_id})
            assert missing["error"]["code"] == -32001
        bad = await _complete(alice, gateway.url, {"text": "/mo", "limit": -1})
        assert bad["error"]["code"] == -32602 and "params.limit" in bad["error"]["message"]
        assert (await _complete(alice, gateway.url, []))["error"]["code"] == -32602
        not_json = await alice.http.post(gateway.url, content=b"{", headers={"content-type": "application/json"})
        assert not_json.json()["error"]["code"] == -32700  # the SDK's own answer
    finally:
        await gateway.commands.unregister("ship")
        await alice.close()
        await anonymous.close()
