// The MCP server at /mcp over real HTTP: both protocol eras, tools, and the HTTP rules.
import { test } from "node:test";
import assert from "node:assert/strict";
import { BASE_URL, mcp } from "./helpers.mjs";
import { seen } from "./clients/protocols.mjs";

const MODERN = "2026-07-28";
const meta = { "io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {} };

function modern(method, params = {}, extra = {}) {
  return mcp(
    { jsonrpc: "2.0", id: 1, method, params: { ...params, _meta: meta } },
    { "mcp-protocol-version": MODERN, "mcp-method": method, ...extra },
  );
}

test("2025-11-25 handshake: initialize, initialized, tools/list, tools/call, ping", async () => {
  const init = await mcp({
    jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "e2e", version: "1" } },
  });
  assert.equal(init.status, 200);
  assert.equal(init.headers.get("content-type"), "application/json");
  assert.equal(init.headers.get("mcp-session-id"), null);
  const ib = await init.json();
  assert.equal(ib.result.protocolVersion, "2025-11-25");
  assert.ok(ib.result.capabilities.tools);

  const note = await mcp({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-protocol-version": "2025-11-25" });
  assert.equal(note.status, 202);
  assert.equal(await note.text(), "");

  const list = await (await mcp({ jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-protocol-version": "2025-11-25" })).json();
  const names = list.result.tools.map((t) => t.name);
  assert.deepEqual(names, ["site_info", "search_pages", "read_page", "list_products", "create_checkout", "get_checkout"]);
  for (const t of list.result.tools) {
    assert.ok(t.description, t.name);
    assert.equal(t.inputSchema.type, "object", t.name);
    assert.equal(t.outputSchema.type, "object", t.name);
  }

  const call = await (await mcp({
    jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "read_page", arguments: { path: "/pricing" } },
  })).json();
  assert.equal(call.result.isError, false);
  assert.match(call.result.structuredContent.markdown, /^# Pricing/);
  assert.deepEqual(JSON.parse(call.result.content[0].text), call.result.structuredContent);

  const ping = await (await mcp({ jsonrpc: "2.0", id: "p", method: "ping" })).json();
  assert.deepEqual(ping, { jsonrpc: "2.0", id: "p", result: {} });
});

test("2026-07-28 stateless: server/discover, tools/list, tools/call with resultType", async () => {
  const disc = await (await modern("server/discover")).json();
  assert.equal(disc.result.resultType, "complete");
  assert.deepEqual(disc.result.supportedVersions, [MODERN, "2025-11-25"]);
  assert.ok(disc.result._meta["io.modelcontextprotocol/serverInfo"].name);
  const list = await (await modern("tools/list")).json();
  assert.equal(list.result.resultType, "complete");
  assert.equal(typeof list.result.ttlMs, "number");
  const call = await (await modern("tools/call", { name: "search_pages", arguments: { query: "pricing" } }, { "mcp-name": "search_pages" })).json();
  assert.equal(call.result.resultType, "complete");
  assert.equal(call.result.structuredContent.results[0].path, "/pricing");
});

test("modern-era header rules and version errors", async () => {
  const mismatch = await modern("tools/list", {}, { "mcp-method": "ping" });
  assert.equal(mismatch.status, 400);
  assert.equal((await mismatch.json()).error.code, -32020);
  const noMeta = await mcp({ jsonrpc: "2.0", id: 1, method: "ping" }, { "mcp-protocol-version": MODERN, "mcp-method": "ping" });
  assert.equal(noMeta.status, 400);
  assert.equal((await noMeta.json()).error.code, -32602);
  const unknown = await mcp(
    { jsonrpc: "2.0", id: 1, method: "ping", params: { _meta: { ...meta, "io.modelcontextprotocol/protocolVersion": "2099-01-01" } } },
    { "mcp-method": "ping" },
  );
  assert.equal(unknown.status, 400);
  const ub = await unknown.json();
  assert.equal(ub.error.code, -32022);
  assert.deepEqual(ub.error.data.supported, [MODERN, "2025-11-25"]);
  const missingMethod = await modern("nope/nope");
  assert.equal(missingMethod.status, 404);
  assert.equal((await missingMethod.json()).error.code, -32601);
  // The stateless era removed the handshake and the per-connection utilities.
  for (const removed of ["initialize", "ping", "logging/setLevel"]) {
    const res = await modern(removed);
    assert.equal(res.status, 404, removed);
    assert.equal((await res.json()).error.code, -32601, removed);
  }
  // A tools/call whose Mcp-Name disagrees with params.name is a header mismatch.
  const name = await modern("tools/call", { name: "site_info", arguments: {} }, { "mcp-name": "read_page" });
  assert.equal(name.status, 400);
  assert.equal((await name.json()).error.code, -32020);
});

test("tool input errors are tool results; protocol errors use JSON-RPC codes", async () => {
  const bad = await (await mcp({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "search_pages", arguments: { query: "" } } })).json();
  assert.equal(bad.result.isError, true);
  assert.equal(typeof bad.result.content[0].text, "string");
  const unknownTool = await (await mcp({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "nope" } })).json();
  assert.equal(unknownTool.error.code, -32602);
  const parse = await mcp("{oops");
  assert.equal(parse.status, 400);
  const parsed = await parse.json();
  assert.equal(parsed.error.code, -32700);
  assert.equal("id" in parsed, false, "an unreadable id is left out, not null");
  const invalid = await mcp({ id: 1, method: "ping" });
  assert.equal((await invalid.json()).error.code, -32600);
  const method = await (await mcp({ jsonrpc: "2.0", id: 3, method: "nope" })).json();
  assert.equal(method.error.code, -32601);
});

test("GET and DELETE on /mcp are 405; foreign Host or Origin is 403", async () => {
  for (const m of ["GET", "DELETE"]) {
    const res = await fetch(`${BASE_URL}/mcp`, { method: m });
    assert.equal(res.status, 405);
    assert.equal((await res.json()).error.code, -32000);
    assert.match(res.headers.get("allow"), /POST/);
  }
  const evil = await mcp({ jsonrpc: "2.0", id: 1, method: "ping" }, { origin: "http://evil.example.com" });
  assert.equal(evil.status, 403);
  const refused = await evil.json();
  assert.equal(refused.error.code, -32000);
  assert.equal(refused.id, 1, "the refusal answers the request's id");
  const ok = await mcp({ jsonrpc: "2.0", id: 1, method: "ping" }, { origin: "http://localhost:3000" });
  assert.equal(ok.status, 200);
  assert.equal(ok.headers.get("access-control-allow-origin"), "http://localhost:3000");
});

test("an unknown MCP-Protocol-Version and a body over 256 KiB are JSON-RPC errors", async () => {
  const old = await mcp({ jsonrpc: "2.0", id: 4, method: "tools/list" }, { "mcp-protocol-version": "1999-01-01" });
  assert.equal(old.status, 400);
  const ob = await old.json();
  assert.deepEqual([ob.id, ob.error.code], [4, -32600]);
  const big = await mcp({ jsonrpc: "2.0", id: 5, method: "ping", params: { pad: "x".repeat(300 * 1024) } });
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error.code, -32000);
});

test("the schema client validated this file's MCP traffic", () => {
  assert.ok(seen.mcp >= 20, `MCP responses validated: ${seen.mcp}`);
});
