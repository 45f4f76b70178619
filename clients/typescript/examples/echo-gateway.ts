// The smallest complete gateway: an @a2a-js/sdk echo agent (JSON-RPC over express) with
// slash commands. The four lines marked `kit` are all it takes to add them.
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import express from "express";
import { AGENT_CARD_PATH, AgentCard, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { CommandsClient, keepCardCurrent, withCommands } from "a2a-commands"; // kit

const card = AgentCard.fromJSON({
  name: "Echo",
  description: "Echoes what it is told",
  version: "1.0.0",
  capabilities: { streaming: true },
  supportedInterfaces: [{ url: "http://127.0.0.1/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
});

// The gateway's own agent: echoes the text back and waits for more.
const echo: AgentExecutor = {
  async execute({ taskId, contextId, task, userMessage }, eventBus) {
    eventBus.publish(AgentEvent.task(task ?? Task.fromJSON({ id: taskId, contextId, status: { state: "TASK_STATE_SUBMITTED" } })));
    const part = userMessage.parts[0]?.content;
    const text = `echo: ${part?.$case === "text" ? part.value : ""}`;
    const message = { messageId: randomUUID(), taskId, contextId, role: "ROLE_AGENT", parts: [{ text }] };
    const status = { state: "TASK_STATE_INPUT_REQUIRED", message, timestamp: new Date().toISOString() };
    eventBus.publish(AgentEvent.statusUpdate(TaskStatusUpdateEvent.fromJSON({ taskId, contextId, status })));
  },
  async cancelTask() {},
};

const taskStore = new InMemoryTaskStore();
const commands = new CommandsClient(); // kit: the sidecar at $A2A_COMMANDS_ADDR, else http://127.0.0.1:50051
keepCardCurrent(card, commands); // kit: the card lists the commands, kept current (once the sidecar answers)
// kit: commands answered by the sidecar, the rest to `echo`; one trusted user, who may change tasks.
const executor = withCommands(echo, { client: commands, taskStore, sender: () => ({ id: "owner", role: "assignee" }) });
const requestHandler = new DefaultRequestHandler(card, taskStore, executor);

const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(Number(process.env.PORT ?? 41241), "127.0.0.1", () => {
  card.supportedInterfaces[0]!.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  console.log(JSON.stringify({ message: "listening", url: card.supportedInterfaces[0]!.url }));
});
