// A plain @a2a-js/sdk agent with no kit: an agent the front stands in front of in the
// tests. It answers every message with "echo: <text> <metadata as JSON, keys sorted>"
// and leaves its task waiting for the next message, as the Python and Go echo agents
// do. JSON-RPC is served at "/", HTTP+JSON under "/rest"; the first line it prints is
// the URL it serves at. With ECHO_AGENT_GRPC=1 it serves A2A's gRPC binding too, on a
// port of its own named by its card (the second line it prints).
import { randomUUID } from "node:crypto";
import { once } from "node:events";
import express from "express";
import { AGENT_CARD_PATH, AgentCard, Message, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import * as grpc from "@grpc/grpc-js";
import { A2AService, grpcService } from "@a2a-js/sdk/server/grpc";

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
const grpcServer = process.env.ECHO_AGENT_GRPC === "1" ? new grpc.Server() : null;
const grpcPort = grpcServer
  ? await new Promise((resolve, reject) =>
      grpcServer.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, port) =>
        error ? reject(error) : resolve(port),
      ),
    )
  : null;
const card = AgentCard.fromJSON({
  name: "echo",
  description: "Echoes what it is sent",
  version: "1.0",
  supportedInterfaces: [
    { url, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    { url: `${url}/rest`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
    ...(grpcPort ? [{ url: `127.0.0.1:${grpcPort}`, protocolBinding: "GRPC", protocolVersion: "1.0" }] : []),
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
if (grpcServer) {
  grpcServer.addService(A2AService, grpcService({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
  console.log(`127.0.0.1:${grpcPort}`);
}
