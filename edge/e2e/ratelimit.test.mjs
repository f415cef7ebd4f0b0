// The per-client limit of one request per second, enforced by a Durable Object per client. Each
// test uses its own CF-Connecting-IP (wrangler dev passes the header through; the first test
// proves it) so tests sharing the one wrangler instance never share a bucket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { get, mcp, uniqueClientIp, assertProblem, assertAcpError, assertUcpError } from "./helpers.mjs";

test("200, then 429 with Retry-After and RateLimit headers, then 200 after one second", async () => {
  const ip = uniqueClientIp();
  const first = await get("/agent/search?q=pricing", { "cf-connecting-ip": ip });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("ratelimit-policy"), '"default";q=1;w=1');
  assert.match(first.headers.get("ratelimit"), /^"default";r=0;t=1$/);

  const second = await get("/agent/search?q=pricing", { "cf-connecting-ip": ip });
  const body = await assertProblem(second, 429);
  assert.equal(body.title, "Too Many Requests");
  assert.equal(second.headers.get("retry-after"), "1");
  assert.equal(second.headers.get("ratelimit-policy"), '"default";q=1;w=1');
  assert.match(second.headers.get("ratelimit"), /^"default";r=0;t=1$/);

  // The behaviour under test is the one-second window itself.
  await new Promise((r) => setTimeout(r, 1000));
  const third = await get("/agent/search?q=pricing", { "cf-connecting-ip": ip });
  assert.equal(third.status, 200);
});

test("clients are limited separately", async () => {
  const a = uniqueClientIp();
  const b = uniqueClientIp();
  assert.equal((await get("/llms.txt", { "cf-connecting-ip": a })).status, 200);
  assert.equal((await get("/llms.txt", { "cf-connecting-ip": a })).status, 429);
  assert.equal((await get("/llms.txt", { "cf-connecting-ip": b })).status, 200);
});

test("the limit covers every endpoint; a 429 on MCP, ACP or UCP is in that protocol's shape", async () => {
  const ip = uniqueClientIp();
  assert.equal((await get("/", { "cf-connecting-ip": ip })).status, 200);
  const res = await mcp({ jsonrpc: "2.0", id: 7, method: "ping" }, { "cf-connecting-ip": ip });
  assert.equal(res.status, 429);
  assert.equal(res.headers.get("retry-after"), "1");
  const rpc = await res.json();
  assert.deepEqual([rpc.id, rpc.error.code, rpc.error.data], [7, -32000, { retry_after: 1 }]);

  const acp = await fetch(`${process.env.BASE_URL}/agent/commerce/acp/checkout_sessions`, {
    method: "POST", headers: { "cf-connecting-ip": ip, "api-version": "2026-04-17", "idempotency-key": "k" }, body: "{}",
  });
  const e = await assertAcpError(acp, 429, "rate_limited");
  assert.equal(e.type, "service_unavailable");
  assert.equal(acp.headers.get("retry-after"), "1");
  assert.equal(acp.headers.get("ratelimit-policy"), '"default";q=1;w=1');

  const ucp = await get("/agent/commerce/ucp/checkout-sessions/cs_test_1", { "cf-connecting-ip": ip });
  await assertUcpError(ucp, 429, "rate_limited");
  assert.equal(ucp.headers.get("retry-after"), "1");
});

test("a CORS preflight does not use up the client's request", async () => {
  const ip = uniqueClientIp();
  const pre = await fetch(`${process.env.BASE_URL}/mcp`, {
    method: "OPTIONS",
    headers: { "cf-connecting-ip": ip, origin: "http://localhost:3000", "access-control-request-method": "POST" },
  });
  assert.equal(pre.status, 204);
  const res = await mcp({ jsonrpc: "2.0", id: 1, method: "ping" }, { "cf-connecting-ip": ip });
  assert.equal(res.status, 200);
});
