// The README's gateway around an echo agent, with the kit (`kit`) or without it (`plain`),
// for scripts/bench-kits.sh: serves on 127.0.0.1, port 0, and prints `listening <port>`.
// Plain JavaScript so it runs from the built package (dist/) with no compile step; it
// imports "a2a-commands" by name, which Node resolves to this very package (it sits
// inside it), as a gateway that installed the archive would.
import { randomUUID } from "node:crypto";
import express from "express";
import { AGENT_CARD_PATH, AgentCard, Task, TaskStatusUpdateEvent } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { CommandsClient, keepCardCurrent, withCommands } from "a2a-commands";

const kit = process.argv[2] === "kit";
const agentCard = AgentCard.fromJSON({
  name: "echo",
  description: "echo",
  version: "1",
  capabilities: { streaming: true },
  supportedInterfaces: [{ url: "http://127.0.0.1/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
});

// The same agent as clients/python/tools/bench_gateway.py's: the task, then the echo,
// leaving it input-required (as examples/echo-gateway.ts does).
const myExecutor = {
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

// From here on, the README's gateway line for line; `kit` decides whether the four
// kit lines run (without them, each is what the README says it replaced).
const taskStore = new InMemoryTaskStore();
let executor = myExecutor;
if (kit) {
  const commands = new CommandsClient(); // the sidecar at $A2A_COMMANDS_ADDR
  await keepCardCurrent(agentCard, commands).ready;
  executor = withCommands(myExecutor, { client: commands, taskStore });
}
const requestHandler = new DefaultRequestHandler(agentCard, taskStore, executor);

const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use(jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
const server = app.listen(0, "127.0.0.1", () => console.log("listening", server.address().port));
