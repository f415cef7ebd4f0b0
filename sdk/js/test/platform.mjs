// Test harness: the real platform (`api --local`) over DynamoDB Local, on a table of its own.
// PLATFORM_API_BIN names the `api` binary and DDB_ENDPOINT the DynamoDB Local endpoint; both
// are required (.ci/test sets them): a missing one fails the run, it never skips.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const exec = promisify(execFile);
export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const FIXTURE_CATALOG = `${ROOT}lambdas/platform/tests/fixtures/catalog.json`;

function required(name, what) {
  const v = process.env[name];
  assert.ok(v, `${name} must be set: ${what}`);
  return v;
}

/** A free loopback port (the platform's connect links need its address before it starts). */
export async function freePort() {
  const srv = createServer();
  srv.listen(0, "127.0.0.1");
  await once(srv, "listening");
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

export class Platform {
  constructor() {
    this.bin = required("PLATFORM_API_BIN", "the path of the platform's `api` binary");
    this.ddb = required("DDB_ENDPOINT", "the DynamoDB Local endpoint, e.g. http://127.0.0.1:8000");
    this.table = `sdk-js-${Date.now()}-${randomBytes(4).toString("hex")}`;
    this.env = {
      ...process.env,
      DDB_ENDPOINT: this.ddb,
      TABLE_NAME: this.table,
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? "local",
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? "local",
      AWS_REGION: process.env.AWS_REGION ?? "us-east-1",
      AWS_EC2_METADATA_DISABLED: "true",
      CATALOG_PATH: FIXTURE_CATALOG,
      // For the integration endpoints (connections, runs, connectors, triggers): local upstreams
      // and webhook receivers on loopback are allowed, credentials sealed with a test key.
      PLATFORM_OUTBOUND_ALLOW: "127.0.0.1,localhost",
      CREDENTIALS_KEY: randomBytes(32).toString("base64"),
      RUST_LOG: "warn",
    };
    this.log = "";
  }

  async admin(...args) {
    const { stdout } = await exec(this.bin, ["admin", ...args], { env: this.env, timeout: 60_000 });
    return JSON.parse(stdout);
  }

  /** A new account; returns its API key. */
  async account(label = "acct") {
    const out = await this.admin("create-account", "--email", `${label}-${randomBytes(6).toString("hex")}@example.com`);
    return out.api_key;
  }

  /** Starts `api --local`; `env` adds variables (e.g. OAUTH_APPS). */
  async start({ env = {} } = {}) {
    if (!this.tableCreated) {
      await this.admin("create-table");
      this.tableCreated = true;
    }
    const port = await freePort();
    this.baseUrl = `http://127.0.0.1:${port}`;
    this.child = spawn(this.bin, ["--local", `127.0.0.1:${port}`], {
      env: (this.runEnv = { ...this.env, PUBLIC_BASE_URL: this.baseUrl, ...env }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child.stderr.on("data", (d) => {
      this.log = (this.log + d).slice(-20_000);
    });
    let out = "";
    const deadline = Date.now() + 120_000;
    for await (const chunk of this.child.stdout) {
      out += chunk;
      if (/^listening on http:\/\//m.test(out)) break;
      if (Date.now() > deadline) break;
    }
    assert.match(out, /^listening on http:\/\//m, `api --local did not start:\n${this.log}`);
    this.child.stdout.resume();
    return this;
  }

  /**
   * One round of the jobs function (trigger polls and webhook deliveries) against this platform's
   * table and configuration: `jobs --once`. PLATFORM_JOBS_BIN names the binary.
   */
  async jobsOnce() {
    const bin = required("PLATFORM_JOBS_BIN", "the path of the platform's `jobs` binary");
    const { stdout } = await exec(bin, ["--once"], { env: this.runEnv, timeout: 120_000 });
    return stdout;
  }

  async stop() {
    if (!this.child || this.child.exitCode !== null) return;
    this.child.kill("SIGTERM");
    await once(this.child, "exit");
  }
}

