// Site pages, content negotiation, search/read and the headers every response carries, against
// the built worker under `wrangler dev` (workerd).
import { test } from "node:test";
import assert from "node:assert/strict";
import { BASE_URL, get, assertProblem } from "./helpers.mjs";

const PAGES = [
  "/",
  "/product",
  "/how-it-works",
  "/docs/local-engine-api",
  "/docs/sensor-hub",
  "/docs/away-alerts-setup",
  "/docs/companion-platform",
  "/pricing",
  "/privacy",
  "/support",
  "/safety",
];

test("home page is Markdown when asked for and HTML otherwise", async () => {
  const md = await get("/", { accept: "text/markdown" });
  assert.equal(md.status, 200);
  assert.equal(md.headers.get("content-type"), "text/markdown; charset=utf-8");
  assert.match(md.headers.get("vary"), /Accept/);
  assert.match(await md.text(), /^# Presence sensing/);
  const html = await get("/", { accept: "text/html" });
  assert.equal(html.headers.get("content-type"), "text/html; charset=utf-8");
  assert.match(await html.text(), /<h1>Presence sensing<\/h1>/);
});

test("every page answers in both representations with discovery Link headers", async () => {
  for (const path of PAGES) {
    const md = await get(path, { accept: "text/markdown" });
    assert.equal(md.status, 200, path);
    assert.equal(md.headers.get("content-type"), "text/markdown; charset=utf-8", path);
    const link = md.headers.get("link");
    for (const rel of ["api-catalog", "service-desc", "service-doc", "describedby"]) {
      assert.match(link, new RegExp(`rel="${rel}"`), `${path} lacks ${rel}`);
    }
    assert.match(link, /rel="alternate"; type="text\/markdown"/, path);
    const html = await get(path);
    assert.equal(html.status, 200, path);
    assert.match(html.headers.get("content-type"), /^text\/html/, path);
  }
});

test("the safety statement and engine facts are on the site", async () => {
  const safety = await (await get("/safety", { accept: "text/markdown" })).text();
  assert.match(safety, /must not be used for medical, emergency or life-safety decisions/);
  const engine = await (await get("/agent/read?path=/docs/local-engine-api")).text();
  assert.match(engine, /127\.0\.0\.1:8799/);
  for (const p of ["/health", "/frame", "/anomaly", "/fall", "/baseline"]) assert.ok(engine.includes(p), p);
  const alerts = await (await get("/agent/read?path=/docs/away-alerts-setup")).text();
  assert.match(alerts, /"message"/);
  assert.match(alerts, /Priority: high/);
});

test("common headers: server, request id, security headers", async () => {
  const res = await get("/pricing");
  assert.equal(res.headers.get("server"), "presence-sensing-edge");
  assert.ok(res.headers.get("x-request-id"));
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  assert.equal(res.headers.get("x-frame-options"), "DENY");
  assert.match(res.headers.get("content-security-policy"), /default-src 'none'/);
  assert.match(res.headers.get("strict-transport-security"), /max-age=/);
});

test("HEAD returns headers without a body", async () => {
  const res = await fetch(`${BASE_URL}/pricing`, { method: "HEAD" });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/html/);
  assert.equal((await res.arrayBuffer()).byteLength, 0);
});

test("pages revalidate with ETag and 304", async () => {
  const first = await get("/pricing", { accept: "text/markdown" });
  const etag = first.headers.get("etag");
  assert.ok(etag);
  const again = await get("/pricing", { accept: "text/markdown", "if-none-match": etag });
  assert.equal(again.status, 304);
});

test("search matches words in page paths", async () => {
  const res = await get("/agent/search?q=away+alerts&limit=5");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  assert.equal(res.headers.get("access-control-allow-origin"), "*");
  const body = await res.json();
  assert.equal(body.query, "away alerts");
  assert.equal(body.results[0].path, "/docs/away-alerts-setup");
  assert.equal(body.results[0].url, `${BASE_URL}/docs/away-alerts-setup`);
  assert.equal(typeof body.results[0].score, "number");
  const limited = await (await get("/agent/search?q=docs&limit=2")).json();
  assert.equal(limited.results.length, 2);
  const none = await (await get("/agent/search?q=zebra")).json();
  assert.deepEqual(none.results, []);
});

test("search rejects bad input with a problem", async () => {
  await assertProblem(await get("/agent/search"), 400);
  await assertProblem(await get("/agent/search?q=pricing&limit=0"), 400);
  await assertProblem(await get("/agent/search?q=pricing&limit=many"), 400);
});

test("read returns one page as Markdown, unknown pages are a 404 problem", async () => {
  const res = await get("/agent/read?path=/pricing");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/markdown; charset=utf-8");
  assert.match(await res.text(), /^# Pricing/);
  await assertProblem(await get("/agent/read?path=/no-such-page"), 404);
  await assertProblem(await get("/agent/read"), 400);
});

test("unknown paths and wrong methods answer RFC 9457 problems", async () => {
  const body = await assertProblem(await get("/no-such-page"), 404);
  assert.equal(body.title, "Not Found");
  const res = await fetch(`${BASE_URL}/pricing`, { method: "POST", body: "x" });
  await assertProblem(res, 405);
  assert.equal(res.headers.get("allow"), "GET, HEAD");
});

test("read-only endpoints answer CORS preflights", async () => {
  const res = await fetch(`${BASE_URL}/agent/search?q=x`, {
    method: "OPTIONS",
    headers: { origin: "https://agent.example", "access-control-request-method": "GET" },
  });
  assert.equal(res.status, 204);
  assert.equal(res.headers.get("access-control-allow-origin"), "*");
  assert.match(res.headers.get("access-control-allow-methods"), /GET/);
});
