// Runs the PyPI `mcp` client (clients/mcp_client.py) against /mcp in each protocol era. The
// test command sets EDGE_PYTHON to its venv's python (with mcp==2.3.0); a missing EDGE_PYTHON
// is a failure, never a skip.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";

const run = promisify(execFile);
const BASE_URL = process.env.BASE_URL;
const PYTHON = process.env.EDGE_PYTHON;
assert.ok(BASE_URL, "BASE_URL must point at `wrangler dev`");
assert.ok(PYTHON, "EDGE_PYTHON must name a python with mcp==2.3.0 installed");
const script = fileURLToPath(new URL("./mcp_client.py", import.meta.url));

for (const mode of ["legacy", "2026-07-28", "auto"]) {
  test(`PyPI mcp client lists and calls tools (mode ${mode})`, async () => {
    const { stdout } = await run(PYTHON, [script, BASE_URL, mode], { timeout: 60_000 });
    assert.match(stdout, new RegExp(`^ok: mode=${mode} `, "m"));
  });
}
