"""The agent scripts/tck.sh puts under the A2A conformance suite (the TCK): the front's
test agent (tests/python/front_agent.py, a2a-sdk 1.3, JSON-RPC at / and HTTP+JSON under
/rest, and the SDK's gRPC binding on a port of its own, all three on its card). Prints
its URL on the first line of stdout, then serves until it is stopped.

    python3 scripts/tck_agent.py              # the plain echo agent
    python3 scripts/tck_agent.py --scenarios  # answers as the TCK's scenarios ask

The TCK expects an agent that acts on the messageId's prefix (its scenarios/*.feature:
"tck-complete-task" completes the task, "tck-input-required" waits for input, ...). The
echo agent leaves every task waiting for input, so the tests that need a completed task,
an artifact or a message answer skip or fail against it alike, direct or through the
front. --scenarios answers them, so that those tests reach the front too.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import signal
import sys
import threading

from a2a.helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import TASK_STATE_SUBMITTED, Part
from google.protobuf import struct_pb2

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"))
from front_agent import Agent  # noqa: E402

# How long the resubscription scenario keeps its task working: twice the TCK SUT's
# streaming timeout (2 s), as its scenario says.
RESUBSCRIBE_WAIT_S = 4.0
# The streaming scenarios that work, stream one text artifact and complete.
STREAMED_TEXT = {
    "tck-stream-001": "Stream hello from TCK",
    "tck-stream-003": "Stream task lifecycle",
    "tck-stream-ordering-001": "Ordered output",
    "tck-stream-artifact-text": "Streamed text content",
}


def _data(value: dict) -> struct_pb2.Value:
    out = struct_pb2.Value()
    out.struct_value.update(value)
    return out


def _file() -> Part:
    return Part(raw=b"tck", filename="output.txt", media_type="text/plain")


class Scenarios(AgentExecutor):
    """Acts on the messageId's prefix as the TCK's scenarios describe; any other message
    completes its task."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        mid = context.message.message_id
        if mid.startswith("tck-message-response"):
            await event_queue.enqueue_event(new_text_message(
                "Direct message response", context_id=context.context_id))
            return
        if context.current_task is None:
            await event_queue.enqueue_event(new_task(
                context.task_id, context.context_id, TASK_STATE_SUBMITTED, history=[context.message]))
            context_id = context.context_id
        else:
            # a2a-sdk 1.3 gives a follow-up that names its task but not its context a new
            # context id; the task's own is the one its events must carry.
            context_id = context.current_task.context_id
        task = TaskUpdater(event_queue, context.task_id, context_id)

        def say(text: str):
            return task.new_agent_message([Part(text=text)])

        # Longer prefixes first: "tck-artifact-file-url" starts with "tck-artifact-file".
        if mid.startswith("tck-complete-task"):
            await task.complete(say("Hello from TCK"))
        elif mid.startswith("tck-input-required"):
            await task.requires_input()
        elif mid.startswith("tck-reject-task"):
            await task.reject(say("rejected"))
        elif mid.startswith("tck-artifact-text"):
            await task.add_artifact([Part(text="Generated text content")])
            await task.complete()
        elif mid.startswith("tck-artifact-file-url"):
            await task.add_artifact([Part(url="https://example.com/output.txt", filename="output.txt",
                                          media_type="text/plain")])
            await task.complete()
        elif mid.startswith("tck-artifact-file"):
            await task.add_artifact([_file()])
            await task.complete()
        elif mid.startswith("tck-artifact-data"):
            await task.add_artifact([Part(data=_data({"key": "value", "count": 42}))])
            await task.complete()
        elif mid.startswith("tck-stream-002"):
            await task.complete()
        elif mid.startswith("tck-stream-artifact-chunked"):
            await task.start_work()
            await task.add_artifact([Part(text="chunk-1 ")], artifact_id="chunked", append=False, last_chunk=False)
            await task.add_artifact([Part(text="chunk-2")], artifact_id="chunked", append=True, last_chunk=True)
            await task.complete()
        elif mid.startswith("tck-stream-artifact-file"):
            await task.start_work()
            await task.add_artifact([_file()])
            await task.complete()
        elif mid.startswith("test-resubscribe-message-id"):
            await task.start_work()
            await asyncio.sleep(RESUBSCRIBE_WAIT_S)
            await task.complete()
        elif (text := next((t for p, t in STREAMED_TEXT.items() if mid.startswith(p)), None)) is not None:
            await task.start_work()
            await task.add_artifact([Part(text=text)])
            await task.complete()
        else:
            await task.complete(say(f"Unhandled messageId prefix: {mid}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", action="store_true", help="answer as the TCK's scenarios ask")
    args = parser.parse_args()
    agent = Agent(executor=Scenarios() if args.scenarios else None, serve_grpc=True)
    print(agent.url, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    agent.stop()


if __name__ == "__main__":
    main()
