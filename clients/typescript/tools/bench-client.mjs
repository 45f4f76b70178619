// CPU per Execute of a `/status`, in this process, for each gRPC client a gateway could
// use (issue 31): the kit's CommandsClient (@grpc/grpc-js), a bare @grpc/grpc-js client
// with protobuf-es doing the (de)serialization, and, when installed, connect-node (the
// kit's client before) with the kit's old settings and with its defaults. Each sends the
// same ExecuteRequest, CALLS times with IN_FLIGHT in flight, after a warm-up, and reports
// process CPU (user + system) per call.
//
//   (cd clients/typescript && npm ci && npm run build \
//     && npm install --no-save @connectrpc/connect@2.1.2 @connectrpc/connect-node@2.1.2)
//   A2A_COMMANDS_ADDR=127.0.0.1:50051 node clients/typescript/tools/bench-client.mjs
//
// against a running sidecar (target/release/a2a-commands serve). Plain JavaScript, run
// from the built package (dist/), as tools/bench-gateway.mjs is.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
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

const serialize = (message) => Buffer.from(toBinary(pb.ExecuteRequestSchema, message));
const deserialize = (bytes) => fromBinary(pb.ExecuteResponseSchema, bytes);
const plain = new grpc.Client(target, grpc.credentials.createInsecure());
const execute = () =>
  new Promise((resolve, reject) =>
    plain.makeUnaryRequest("/a2a.commands.v1.CommandService/Execute", serialize, deserialize, request, (error, answer) =>
      error ? reject(error) : resolve(answer),
    ),
  );
rows.push(["@grpc/grpc-js, a bare client, protobuf-es serializers", await measure(execute)]);
plain.close();

const kit = new CommandsClient({ address: `http://${target}` });
rows.push(["the kit's CommandsClient (@grpc/grpc-js)", await measure(() => kit.execute(request))]);
kit.close();

let connect;
try {
  connect = { ...(await import("@connectrpc/connect")), ...(await import("@connectrpc/connect-node")) };
} catch {
  console.error("@connectrpc/connect-node is not installed (npm install --no-save @connectrpc/connect-node): its rows are left out");
}
if (connect) {
  const baseUrl = `http://${target}`;
  const session = new connect.Http2SessionManager(baseUrl, { pingIntervalMs: 10_000, pingTimeoutMs: 5_000 });
  const old = connect.createClient(pb.CommandService, connect.createGrpcTransport({ baseUrl, sessionManager: session }));
  rows.push(["connect-node 2.1, the kit's old settings (a session manager with pings)", await measure(() => old.execute(request))]);
  session.abort();
  const bare = connect.createClient(pb.CommandService, connect.createGrpcTransport({ baseUrl }));
  rows.push(["connect-node 2.1, a bare gRPC transport (defaults)", await measure(() => bare.execute(request))]);
}

console.log(`| client (${calls} Execute /status, ${inFlight} in flight) | CPU µs per call | wall µs per call |`);
console.log("| --- | ---: | ---: |");
for (const [name, { cpu, wall }] of rows) console.log(`| ${name} | ${cpu.toFixed(0)} | ${wall.toFixed(0)} |`);
