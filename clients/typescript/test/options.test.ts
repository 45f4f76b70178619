/** The client's admin token and TLS (mTLS) options, against the real binary. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { CommandsClient, CommandsError } from "a2a-commands";
import { startSidecar } from "./harness.js";

const spec = (name: string) => ({ spec: { name, description: `The ${name} command` } });

test("Register and Unregister send the admin token", async () => {
  const dir = mkdtempSync(join(tmpdir(), "a2a-commands-token-"));
  writeFileSync(join(dir, "token"), "s3cret\n");
  const sidecar = await startSidecar({ args: ["--admin-token-file", join(dir, "token")] });
  const anonymous = new CommandsClient({ address: sidecar.address });
  const wrong = new CommandsClient({ address: sidecar.address, adminToken: "nope" });
  let token = "s3cret";
  const admin = new CommandsClient({ address: sidecar.address, adminToken: () => token });
  try {
    const code = (error: unknown) => (error instanceof CommandsError ? error.codeName : String(error));
    await assert.rejects(anonymous.register(spec("deploy")), (e) => code(e) === "unauthenticated");
    await assert.rejects(wrong.register(spec("deploy")), (e) => code(e) === "permission_denied");
    const created = await admin.register(spec("deploy"));
    assert.equal(typeof created.revision, "bigint");
    assert.ok((await anonymous.listSpecs()).commands.some((c) => c.spec?.name === "deploy"), "reads need no token");
    writeFileSync(join(dir, "token"), "rotated\n");
    await assert.rejects(admin.unregister("deploy"), (e) => code(e) === "permission_denied");
    token = "rotated";
    assert.ok((await admin.unregister("deploy")) > created.revision);
  } finally {
    for (const client of [anonymous, wrong, admin]) client.close();
    assert.equal(await sidecar.stop(), 0);
  }
});

test("TLS with client certificates (mTLS)", async () => {
  const dir = mkdtempSync(join(tmpdir(), "a2a-commands-tls-"));
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=test-ca");
  for (const [name, ext] of [["server", "subjectAltName=IP:127.0.0.1"], ["client", "extendedKeyUsage=clientAuth"]] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
    openssl("req", ...key, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${name}`);
    openssl("x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
      "-out", `${name}.pem`, "-days", "1", "-extfile", `${name}.ext`);
  }
  const file = (name: string) => join(dir, name);
  const sidecar = await startSidecar({
    args: ["--tls-cert", file("server.pem"), "--tls-key", file("server.key"), "--tls-client-ca", file("ca.pem")],
  });
  const ca = readFileSync(file("ca.pem"));
  const trusted = new CommandsClient({
    address: sidecar.address,
    tls: { ca, cert: readFileSync(file("client.pem")), key: readFileSync(file("client.key")) },
  });
  const noCertificate = new CommandsClient({ address: sidecar.address, tls: { ca }, timeoutMs: 5_000 });
  try {
    const specs = await trusted.listSpecs();
    assert.deepEqual(specs.commands.map((c) => c.spec?.name), ["model", "effort", "sub-task", "status"]);
    await assert.rejects(noCertificate.listSpecs(), CommandsError);
  } finally {
    trusted.close();
    noCertificate.close();
    assert.equal(await sidecar.stop(), 0);
  }
});
