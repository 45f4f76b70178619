// CPU per Execute of a `/status`, in this process, for each gRPC client a gateway could
// use (issue 31): the kit's CommandsClient (connect-node as used now), a bare
// connect-node gRPC transport with its defaults, and @grpc/grpc-js with protobuf-es
// doing the (de)serialization. Each sends the same ExecuteRequest, CALLS times with
// IN_FLIGHT in flight, after a warm-up, and reports process CPU (user + system) per call.
//
//   (cd clients/typescript && npm ci && npm run build && npm install --no-save @grpc/grpc-js)
//   A2A_COMMANDS_ADDR=127.0.0.1:50051 node clients/typescript/tools/bench-client.mjs
//
// against a running sidecar (target/release/a2a-commands serve). Plain JavaScript, run
// from the built package (dist/), as tools/bench-gateway.mjs is.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { CommandsClient, pb } from "a2a-commands";

const address = process.env.A2A_COMMANDS_ADDR || "127.0.0.1:50051";
const target = address.replace(/^https?:\/\//, "").replace(/\/$/, "");
const calls = Number(process.env.CALLS || 5000);
const inFlight = Number(process.env.IN_FLIGHT || 8);

const request = create(pb.ExecuteRequestSchema, {
  message: { messageId: "m-1", contextId: "c-1", taskId: "t-1", role: pb.Role.USER, parts: [{ content: { case: "text", value: "/status" } }] },
  task: { id: "t-1", contextId: "c-1", state: pb.TaskState.INPUT_REQUIRED },
  sender: { id: "u-1", role: pb.ParticipantRole.ASSIGNEE },
});

/** Runs `execute` `count` times, `inFlight` at a time; checks every answer. */
async function drive(execute, count) {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      const answer = await execute();
      if (answer.result.case !== "command" || !answer.result.value.reply.startsWith("Task t-1")) {
        throw new Error(`unexpected answer: ${JSON.stringify(answer.result.case)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** CPU microseconds per call of `execute`, after a warm-up of a fifth as many calls. */
async function measure(execute) {
  await drive(execute, Math.ceil(calls / 5));
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  await drive(execute, calls);
  const used = process.cpuUsage(cpu);
  const wall = Number(process.hrtime.bigint() - started) / 1e3;
  return { cpu: (used.user + used.system) / calls, wall: wall / calls };
}

const rows = [];

const kit = new CommandsClient({ address: `http://${target}` });
rows.push(["the kit's CommandsClient (connect-node, its settings)", await measure(() => kit.execute(request))]);
kit.close();

const bare = createClient(pb.CommandService, createGrpcTransport({ baseUrl: `http://${target}` }));
rows.push(["connect-node, a bare gRPC transport (defaults)", await measure(() => bare.execute(request))]);

let grpc;
try {
  grpc = await import("@grpc/grpc-js");
} catch {
  console.error("@grpc/grpc-js is not installed (npm install --no-save @grpc/grpc-js): its row is left out");
}
if (grpc) {
  const Client = grpc.makeGenericClientConstructor(
    {
      execute: {
        path: "/a2a.commands.v1.CommandService/Execute",
        requestStream: false,
        responseStream: false,
        requestSerialize: (message) => Buffer.from(toBinary(pb.ExecuteRequestSchema, message)),
        requestDeserialize: (bytes) => fromBinary(pb.ExecuteRequestSchema, bytes),
        responseSerialize: (message) => Buffer.from(toBinary(pb.ExecuteResponseSchema, message)),
        responseDeserialize: (bytes) => fromBinary(pb.ExecuteResponseSchema, bytes),
      },
    },
    "CommandService",
  );
  const client = new Client(target, grpc.credentials.createInsecure());
  const execute = () =>
    new Promise((resolve, reject) => client.execute(request, (error, answer) => (error ? reject(error) : resolve(answer))));
  rows.push(["@grpc/grpc-js, protobuf-es serializers", await measure(execute)]);
  client.close();
}

console.log(`| client (${calls} Execute /status, ${inFlight} in flight) | CPU µs per call | wall µs per call |`);
console.log("| --- | ---: | ---: |");
for (const [name, { cpu, wall }] of rows) console.log(`| ${name} | ${cpu.toFixed(0)} | ${wall.toFixed(0)} |`);
