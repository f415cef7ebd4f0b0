// Wire-level behaviour the platform cannot be made to show on demand (a 503 that clears, a server
// that never answers, an HTTP-date Retry-After), against a real HTTP server on loopback. What the
// platform itself answers is tested in platform.test.js.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, CompanionError, VERSION } from "../src/index.js";

let server;
let baseUrl;
const seen = [];
let script = [];

before(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    const next = script.shift();
    if (!next) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apps: [{ id: "slack" }], next_cursor: null }));
      return;
    }
    if (next === "hang") return; // never answers
    if (next === "stall") {
      // Headers, then nothing.
      res.writeHead(200, { "content-type": "application/json" });
      res.write("{");
      return;
    }
    res.writeHead(next.status, { "content-type": "application/problem+json", ...(next.headers ?? {}) });
    res.end(JSON.stringify({ status: next.status, code: next.code, detail: "scripted", request_id: "req_0000000000000001" }));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});

test("requests carry a descriptive User-Agent; public calls send no key", async () => {
  const client = new Client({ apiKey: "cpk_secret", baseUrl });
  await client.catalog({ category: "messaging" });
  const req = seen.at(-1);
  assert.equal(req.url, "/api/v1/catalog?category=messaging");
  assert.equal(req.headers.authorization, undefined);
  assert.equal(req.headers["user-agent"], `companion-js/${VERSION}`);
  assert.equal(VERSION, "1.0.0");
});

test("503 without Retry-After is retried with growing backoff and then succeeds", async () => {
  script = [{ status: 503, code: "store_unavailable" }, { status: 503, code: "store_unavailable" }];
  const waits = [];
  const client = new Client({ apiKey: "cpk_x", baseUrl, retryBaseDelayMs: 100, sleep: async (ms) => waits.push(ms) });
  const page = await client.apps();
  assert.equal(page.apps[0].id, "slack");
  assert.equal(waits.length, 2);
  assert.ok(waits[0] >= 50 && waits[0] <= 100, String(waits[0]));
  assert.ok(waits[1] >= 100 && waits[1] <= 200, String(waits[1]));
});

test("Retry-After as an HTTP date is honoured", async () => {
  const at = new Date(Date.now() + 5_000).toUTCString();
  script = [{ status: 429, code: "rate_limited", headers: { "retry-after": at } }];
  const waits = [];
  const client = new Client({ apiKey: "cpk_x", baseUrl, sleep: async (ms) => waits.push(ms) });
  await client.apps();
  assert.equal(waits.length, 1);
  assert.ok(waits[0] >= 3_000 && waits[0] <= 6_000, String(waits[0]));
});

test("other errors are not retried", async () => {
  script = [{ status: 500, code: "internal" }];
  const client = new Client({ apiKey: "cpk_x", baseUrl, sleep: async () => assert.fail("no retry") });
  const before = seen.length;
  const err = await client.apps().catch((e) => e);
  assert.equal(err.status, 500);
  assert.equal(seen.length - before, 1);
});

test("a server that does not answer times out with a CompanionError", async () => {
  script = ["hang"];
  const client = new Client({ apiKey: "cpk_x", baseUrl, timeoutMs: 300 });
  const err = await client.apps().catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.code, "timeout");
  assert.equal(err.status, 0);
});

test("a server that sends headers and then stalls times out too", async () => {
  script = ["stall"];
  const client = new Client({ apiKey: "cpk_x", baseUrl, timeoutMs: 300 });
  const err = await client.apps().catch((e) => e);
  assert.equal(err.code, "timeout");
});

test("an unreachable platform is a network_error", async () => {
  const client = new Client({ apiKey: "cpk_x", baseUrl: "http://127.0.0.1:9", maxRetries: 0 });
  const err = await client.apps().catch((e) => e);
  assert.equal(err.code, "network_error");
});

test("COMPANION_API_KEY and COMPANION_BASE_URL are the defaults; the key is never printed", async () => {
  process.env.COMPANION_API_KEY = "cpk_from_env";
  process.env.COMPANION_BASE_URL = `${baseUrl}/`;
  try {
    const client = new Client();
    assert.equal(client.baseUrl, baseUrl);
    await client.apps();
    assert.equal(seen.at(-1).headers.authorization, "Bearer cpk_from_env");
    assert.ok(!JSON.stringify(client).includes("cpk_from_env"));
    const { inspect } = await import("node:util");
    assert.ok(!inspect(client).includes("cpk_from_env"));
  } finally {
    delete process.env.COMPANION_API_KEY;
    delete process.env.COMPANION_BASE_URL;
  }
});
