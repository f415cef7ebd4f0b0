// The per-client limit of one request per second, enforced by a Durable Object per client. Each
// test uses its own CF-Connecting-IP (wrangler dev passes the header through; the first test
// proves it) so tests sharing the one wrangler instance never share a bucket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { get, mcp, uniqueClientIp, assertProblem } from "./helpers.mjs";

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

test("the limit covers every endpoint, MCP included", async () => {
  const ip = uniqueClientIp();
  assert.equal((await get("/", { "cf-connecting-ip": ip })).status, 200);
  const res = await mcp({ jsonrpc: "2.0", id: 1, method: "ping" }, { "cf-connecting-ip": ip });
  await assertProblem(res, 429);
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
