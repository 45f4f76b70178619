// A plain @a2a-js/sdk agent with no kit: an agent the front stands in front of in the
// tests. It answers every message with "echo: <text> <metadata as JSON, keys sorted>"
// and leaves its task waiting for the next message, as the Python and Go echo agents
// do. JSON-RPC is served at "/", HTTP+JSON under "/rest"; the first line it prints is
// the URL it serves at.
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import express from "express";
import { AGENT_CARD_PATH, AgentCard, Message, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk/server/express";

/** JSON with object keys sorted at every depth. */
const sorted = (value) =>
  Array.isArray(value)
    ? value.map(sorted)
    : value && typeof value === "object"
      ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, sorted(value[k])]))
      : value;

const echo = {
  async execute(request, eventBus) {
    const { taskId, contextId, userMessage } = request;
    const part = userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    const metadata = JSON.stringify(sorted(userMessage.metadata ?? {}));
    eventBus.publish(
      AgentEvent.task(
        request.task ??
          Task.fromJSON({ id: taskId, contextId, status: { state: "TASK_STATE_SUBMITTED" }, history: [Message.toJSON(userMessage)] }),
      ),
    );
    eventBus.publish(
      AgentEvent.statusUpdate(
        TaskStatusUpdateEvent.fromJSON({
          taskId,
          contextId,
          status: {
            state: "TASK_STATE_INPUT_REQUIRED",
            timestamp: new Date().toISOString(),
            message: { messageId: randomUUID(), taskId, contextId, role: "ROLE_AGENT", parts: [{ text: `echo: ${text} ${metadata}` }] },
          },
        }),
      ),
    );
  },
  async cancelTask() {},
};

const app = express();
const server = app.listen(0, "127.0.0.1");
await once(server, "listening");
const url = `http://127.0.0.1:${server.address().port}`;
const card = AgentCard.fromJSON({
  name: "echo",
  description: "Echoes what it is sent",
  version: "1.0",
  supportedInterfaces: [
    { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    { url: `${url}/rest`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
  ],
  capabilities: { streaming: true },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "Echo", description: "Echoes the text", tags: ["echo"] }],
});
const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), echo);
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use("/rest", restHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
console.log(url);
