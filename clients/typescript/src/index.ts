/**
 * a2a-commands for `@a2a-js/sdk` gateways: slash commands (the A2A Commands extension
 * v1) answered by the a2a-commands sidecar.
 *
 * - {@link CommandsClient}: every RPC, with {@link CommandsError} for failures;
 * - {@link withCommands}: the `AgentExecutor` wrapper, which also answers completion
 *   ({@link CommandsExecutor.complete}; served over JSON-RPC by `completionHandler` from
 *   `a2a-commands/express`);
 * - {@link keepCardCurrent}: the agent card's extension entry, kept current;
 * - {@link buildTaskSnapshot}, {@link applyChanges}: the task-data convention
 *   ({@link TASK_DATA_KEY}), as docs/kit-contract.md writes it for every kit;
 * - {@link mayBeCommand}, {@link commandName}: which messages reach the sidecar, and
 *   which get the fallback reply when it is away;
 * - {@link parseAddress}: `A2A_COMMANDS_ADDR`'s two forms;
 * - {@link fromSdkMessage}, {@link toSdkStatusUpdate} and friends: type conversion;
 * - `pb`: the sidecar's generated protobuf types.
 *
 * @packageDocumentation
 */
export * from "./address.js";
export * from "./client.js";
export * from "./syntax.js";
export * from "./convert.js";
export * from "./task-data.js";
export * from "./card.js";
export * from "./executor.js";
export * as pb from "./pb.js";
export { traceContext } from "./trace-context.js";
