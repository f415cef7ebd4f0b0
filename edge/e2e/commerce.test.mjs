// Commerce end to end: the Worker under `wrangler dev` against the Stripe fake
// (edge/e2e/stripe-fake, started by the test command; STRIPE_FAKE_URL points at it). The tests
// in this file run in order and are the only ones that drive the fake's control hooks.
import { test, before, after, beforeEach } from "node:test";
import { createServer } from "node:http";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { BASE_URL, get, mcp, assertProblem, assertAcpError, assertUcpError, assertUcpOutcome, assertUcpLegacyError } from "./helpers.mjs";
import { seen, declarePlatformProfile } from "./clients/protocols.mjs";

const FAKE = process.env.STRIPE_FAKE_URL;
assert.ok(FAKE, "STRIPE_FAKE_URL must point at the Stripe fake (the test command starts it)");

const UCP = "/agent/commerce/ucp/checkout-sessions";
const ACP = "/agent/commerce/acp/checkout_sessions";
const ACP_VERSIONS = ["2025-09-29", "2025-12-12", "2026-01-16", "2026-01-30", "2026-04-17"];

async function control(path, body = {}) {
  const res = await fetch(`${FAKE}/__control/${path}`, { method: "POST", body: JSON.stringify(body) });
  assert.equal(res.status, 200, `control ${path}`);
  return res.json();
}

async function stripeRequests() {
  return (await fetch(`${FAKE}/__control/requests`)).json();
}

async function sessionPosts() {
  return (await stripeRequests()).filter((r) => r.method === "POST" && r.path === "/v1/checkout/sessions");
}

// The platform side of UCP negotiation: a loopback server with platform profiles that declare
// UCP versions (the Worker may fetch them because edge/.dev.vars names http://127.0.0.1 in
// UCP_DEV_PROFILE_ORIGINS; production fetches public https profiles only). A request whose
// UCP-Agent names one speaks that profile's version, and the schema client checks its answer
// against that version's schemas.
function platformProfile(version) {
  const spec = (p) => `https://ucp.dev/${version}/specification/${p}`;
  return {
    ucp: {
      version,
      services: { "dev.ucp.shopping": [{ version, spec: spec("overview"), transport: "rest", schema: `https://ucp.dev/${version}/services/shopping/openapi.json` }] },
      capabilities: { "dev.ucp.shopping.checkout": [{ version, spec: spec("checkout"), schema: `https://ucp.dev/${version}/schemas/shopping/checkout.json` }] },
      payment_handlers: {},
    },
  };
}
const platform = createServer((req, res) => {
  const m = /^\/ucp\/(\d{4}-\d{2}-\d{2})\.json$/.exec(req.url);
  if (m) return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(platformProfile(m[1])));
  if (req.url === "/ucp/not-a-profile.json") return res.writeHead(200, { "content-type": "text/html" }).end("<html>");
  res.writeHead(503).end();
});
let PLATFORM;
const agentHeader = (file) => ({ "ucp-agent": `profile="${PLATFORM}/ucp/${file}"` });
/** The headers of a platform that speaks UCP 2026-01-23. */
const OLD = () => agentHeader("2026-01-23.json");
before(async () => {
  await new Promise((resolve) => platform.listen(0, "127.0.0.1", resolve));
  PLATFORM = `http://127.0.0.1:${platform.address().port}`;
  declarePlatformProfile(`${PLATFORM}/ucp/2026-01-23.json`, "2026-01-23");
  declarePlatformProfile(`${PLATFORM}/ucp/2026-04-08.json`, "2026-04-08");
});
after(() => platform.close());

beforeEach(async () => {
  await control("fail", { mode: "none" });
});

function post(path, body, headers = {}) {
  return fetch(`${BASE_URL}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function acpHeaders(version, extra = {}) {
  return { "api-version": version, "idempotency-key": randomUUID(), "request-id": randomUUID(), ...extra };
}

test("catalogue: live offers selected by Stripe metadata, with fetched_at", async () => {
  const before = (await stripeRequests()).length;
  const res = await get("/agent/commerce/products");
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.equal(body.source, "stripe");
  assert.ok(Math.abs(Date.parse(body.fetched_at) - Date.now()) < 120_000, body.fetched_at);
  assert.deepEqual(body.offers.map((o) => o.id), ["pro_monthly", "pro_yearly", "sensor_node", "sensor_hub"]);
  const [monthly, yearly, node, hub] = body.offers;
  assert.deepEqual(monthly, {
    id: "pro_monthly", name: "Presence Pro", description: "Away Alerts, history and the companion platform.",
    kind: "subscription", price: { amount: 900, currency: "usd", display: "$9.00" }, interval: "month",
    trial: { days: 14 }, available: true, availability: "in_stock",
  });
  assert.equal(yearly.interval, "year");
  assert.deepEqual(yearly.trial, { days: 14 }, "trial from product metadata trial_days");
  assert.equal(node.kind, "hardware");
  assert.equal(node.interval, null);
  assert.equal(node.trial, null);
  assert.equal(hub.available, false);
  assert.equal(hub.availability, "out_of_stock");
  const calls = (await stripeRequests()).slice(before);
  const list = calls.find((r) => r.path === "/v1/prices");
  assert.ok(list, "read live from Stripe");
  assert.equal(list.stripe_version, "2025-09-30.clover");
  assert.match(decodeURIComponent(list.query), /active=true&expand\[\]=data\.product&limit=100/);
});

test("availability follows the product's metadata", async () => {
  try {
    await control("products/prod_node", { metadata: { availability: "preorder" } });
    let node = (await (await get("/agent/commerce/products")).json()).offers.find((o) => o.id === "sensor_node");
    assert.equal(node.availability, "preorder");
    assert.equal(node.available, true);
    await control("products/prod_node", { metadata: { availability: "out_of_stock" } });
    node = (await (await get("/agent/commerce/products")).json()).offers.find((o) => o.id === "sensor_node");
    assert.equal(node.available, false);
    const res = await post(UCP, { line_items: [{ item: { id: "sensor_node" }, quantity: 1 }] });
    await assertUcpOutcome(res, "out_of_stock", "recoverable");
  } finally {
    await control("products/prod_node", { metadata: { availability: "in_stock" } });
  }
});

test("UCP: create → continue_url → complete returns the same session; paying completes it", async () => {
  const res = await post(UCP, { line_items: [{ item: { id: "pro_monthly" }, quantity: 1 }] });
  assert.equal(res.status, 201);
  const created = await res.json();
  assert.match(created.id, /^cs_test_/);
  assert.equal(res.headers.get("location"), `${BASE_URL}${UCP}/${created.id}`);
  assert.equal(created.status, "requires_escalation");
  assert.equal(created.ucp.version, "2026-04-08");
  assert.equal(created.currency, "USD");
  assert.equal(created.continue_url, `${FAKE}/c/pay/${created.id}`);
  const ask = created.messages.find((m) => m.type === "error");
  assert.equal(ask.severity, "requires_buyer_input");
  assert.match(ask.content, /continue_url/);
  assert.ok(created.messages.some((m) => /\$0\.00 due today: 14-day free trial, then \$9\.00 per month/.test(m.content)));
  assert.deepEqual(created.line_items[0].item, { id: "pro_monthly", title: "Presence Pro", price: 900 });
  assert.equal(created.totals.find((t) => t.type === "total").amount, created.line_items[0].totals.find((t) => t.type === "total").amount);

  const form = (await sessionPosts()).at(-1).form;
  assert.equal(form.mode, "subscription");
  assert.deepEqual(form.line_items, [{ price: "price_pro_monthly", quantity: "1" }]);
  assert.equal(form.subscription_data.trial_period_days, "14");
  assert.equal(form.shipping_address_collection, undefined);

  const page = await fetch(created.continue_url);
  assert.equal(page.status, 200, "the hosted page answers");

  const read = await (await get(`${UCP}/${created.id}`)).json();
  assert.deepEqual(read, created);
  const complete = await post(`${UCP}/${created.id}/complete`, {});
  assert.equal(complete.status, 200);
  assert.deepEqual(await complete.json(), created, "complete answers the same session and link");

  await control(`sessions/${created.id}/complete`);
  const done = await (await get(`${UCP}/${created.id}`)).json();
  assert.equal(done.status, "completed");
  assert.match(done.order.id, /^sub_/);
  assert.equal(done.order.permalink_url, `${BASE_URL}${UCP}/${created.id}`);
  assert.equal(done.continue_url, undefined);
  const cancel = await post(`${UCP}/${created.id}/cancel`, {});
  await assertUcpOutcome(cancel, "checkout_not_cancelable", "unrecoverable");
});

test("UCP 2026-01-23: discovered through supported_versions; a full checkout in that version's shapes", async () => {
  // Discovery: the current profile names the previous version's leaf profile.
  const current = (await (await get("/.well-known/ucp")).json()).ucp;
  const url = current.supported_versions["2026-01-23"];
  assert.equal(url, `${BASE_URL}/.well-known/ucp/2026-01-23`);
  const old = (await (await fetch(url)).json()).ucp;
  assert.equal(old.version, "2026-01-23");
  assert.equal(old.supported_versions, undefined, "a version profile is a leaf");
  assert.equal(old.services["dev.ucp.shopping"][0].endpoint, current.services["dev.ucp.shopping"][0].endpoint);

  const res = await post(UCP, { line_items: [{ item: { id: "pro_monthly" }, quantity: 1 }] }, OLD());
  assert.equal(res.status, 201);
  const created = await res.json();
  assert.equal(created.ucp.version, "2026-01-23");
  assert.deepEqual(created.ucp.capabilities, { "dev.ucp.shopping.checkout": [{ version: "2026-01-23" }] });
  assert.equal(created.status, "requires_escalation");
  assert.equal(created.continue_url, `${FAKE}/c/pay/${created.id}`);
  assert.equal(created.messages.find((m) => m.type === "error").severity, "requires_buyer_input");
  const path = `${UCP}/${created.id}`;
  assert.deepEqual(await (await get(path, OLD())).json(), created);
  const same = await fetch(`${BASE_URL}${path}`, {
    method: "PUT", headers: { "content-type": "application/json", ...OLD() },
    body: JSON.stringify({ line_items: [{ item: { id: "pro_monthly" }, quantity: 1 }] }),
  });
  assert.equal(same.status, 200);
  assert.deepEqual(await (await post(`${path}/complete`, {}, OLD())).json(), created);
  // The same session read without a profile is the 2026-04-08 checkout.
  assert.equal((await (await get(path)).json()).ucp.version, "2026-04-08");

  await control(`sessions/${created.id}/complete`);
  const done = await (await get(path, OLD())).json();
  assert.equal(done.status, "completed");
  assert.equal(done.ucp.version, "2026-01-23");
  assert.match(done.order.id, /^sub_/);
  // A final session cannot be canceled: an HTTP error here, not a 200 error response.
  await assertUcpLegacyError(await post(`${path}/cancel`, {}, OLD()), 405, "checkout_not_cancelable", "recoverable");

  const other = await (await post(UCP, { line_items: [{ item: { id: "sensor_node" } }] }, OLD())).json();
  const canceled = await post(`${UCP}/${other.id}/cancel`, {}, OLD());
  assert.equal(canceled.status, 200);
  assert.equal((await canceled.json()).status, "canceled");
});

test("UCP: hardware collects shipping; cancel → canceled; update cannot change items", async () => {
  const res = await post(UCP, { line_items: [{ item: { id: "sensor_node" }, quantity: 2 }] });
  assert.equal(res.status, 201);
  const c = await res.json();
  assert.equal(c.totals.find((t) => t.type === "total").amount, 9800);
  const form = (await sessionPosts()).at(-1).form;
  assert.equal(form.mode, "payment");
  assert.deepEqual(form.shipping_address_collection, { allowed_countries: ["US"] });
  assert.equal(form.subscription_data, undefined);

  const same = await fetch(`${BASE_URL}${UCP}/${c.id}`, {
    method: "PUT", headers: { "content-type": "application/json" },
    body: JSON.stringify({ line_items: [{ item: { id: "sensor_node" }, quantity: 2 }] }),
  });
  assert.equal(same.status, 200);
  const changed = await fetch(`${BASE_URL}${UCP}/${c.id}`, {
    method: "PUT", headers: { "content-type": "application/json" },
    body: JSON.stringify({ line_items: [{ item: { id: "sensor_node" }, quantity: 3 }] }),
  });
  const fixed = await assertUcpOutcome(changed, "line_items_fixed", "recoverable");
  assert.equal(fixed.path, "$.line_items");

  const cancel = await post(`${UCP}/${c.id}/cancel`, {});
  assert.equal(cancel.status, 200);
  const canceled = await cancel.json();
  assert.equal(canceled.status, "canceled");
  assert.equal(canceled.continue_url, undefined);
  assert.equal((await (await get(`${UCP}/${c.id}`)).json()).status, "canceled");
  await assertUcpOutcome(await post(`${UCP}/${c.id}/complete`, {}), "checkout_canceled", "unrecoverable");
});

for (const version of ACP_VERSIONS) {
  test(`ACP ${version}: create, read, complete, pay`, async () => {
    const escalation = version >= "2026-01-30";
    const body = escalation
      ? { line_items: [{ id: "pro_monthly" }], currency: "usd", capabilities: { payment: { handlers: [{ id: "card_tokenized" }] } } }
      : { items: [{ id: "pro_monthly", quantity: 1 }] };
    const headers = acpHeaders(version);
    const res = await post(ACP, body, headers);
    assert.equal(res.status, 201);
    assert.equal(res.headers.get("idempotency-key"), headers["idempotency-key"]);
    assert.equal(res.headers.get("request-id"), headers["request-id"]);
    const s = await res.json();
    assert.equal(s.currency, "usd");
    assert.equal(s.line_items[0].item.id, "pro_monthly");
    assert.equal(s.totals.find((t) => t.type === "total").display_text, "Total");
    const link = `${FAKE}/c/pay/${s.id}`;
    if (escalation) {
      assert.equal(s.status, "requires_escalation");
      assert.equal(s.continue_url, link);
      assert.deepEqual(s.capabilities, { payment: { handlers: [] } });
    } else {
      assert.equal(s.status, "not_ready_for_payment");
      assert.equal(s.continue_url, undefined);
      assert.ok(s.messages.some((m) => m.type === "info" && m.content.includes(link)), "link in an info message");
      // Payment happens only on the hosted page: no payment provider is offered to the agent.
      assert.equal(s.payment_provider, undefined);
    }
    const forwarded = (await sessionPosts()).at(-1);
    assert.equal(forwarded.idempotency_key, headers["idempotency-key"], "Idempotency-Key forwarded to Stripe");

    const read = await get(`${ACP}/${s.id}`, { "api-version": version });
    assert.deepEqual(await read.json(), s);
    const complete = await post(`${ACP}/${s.id}/complete`, {}, acpHeaders(version));
    assert.equal(complete.status, 200);
    assert.deepEqual(await complete.json(), s);

    await control(`sessions/${s.id}/complete`);
    const done = await (await get(`${ACP}/${s.id}`, { "api-version": version })).json();
    assert.equal(done.status, "completed");
    assert.equal(done.order.checkout_session_id, s.id);
    const cancel = await post(`${ACP}/${s.id}/cancel`, {}, acpHeaders(version));
    await assertAcpError(cancel, 405, "checkout_not_cancelable");
    assert.equal(cancel.headers.get("allow"), "GET");
  });
}

test("ACP: idempotent replay, key conflicts, required headers", async () => {
  const headers = acpHeaders("2026-04-17");
  const body = { line_items: [{ id: "sensor_node" }], currency: "usd" };
  const posts = (await sessionPosts()).length;
  const first = await post(ACP, body, headers);
  assert.equal(first.status, 201);
  const firstBody = await first.text();
  const replay = await post(ACP, body, headers);
  assert.equal(replay.status, 201);
  assert.equal(replay.headers.get("idempotent-replayed"), "true");
  assert.equal(await replay.text(), firstBody, "identical answer");
  assert.equal((await sessionPosts()).length, posts + 1, "one Stripe session");

  const conflict = await post(ACP, { ...body, line_items: [{ id: "pro_monthly" }] }, headers);
  await assertAcpError(conflict, 422, "idempotency_conflict");

  const { "idempotency-key": _k, ...noKey } = acpHeaders("2026-04-17");
  await assertAcpError(await post(ACP, body, noKey), 400, "idempotency_key_required");
  const noVersion = await post(ACP, body, { "idempotency-key": randomUUID() });
  const p = await assertAcpError(noVersion, 400, "missing_api_version");
  assert.deepEqual(p.supported_versions, [...ACP_VERSIONS].reverse());
  const old = await post(ACP, body, acpHeaders("2024-06-01"));
  assert.deepEqual((await assertAcpError(old, 400, "unsupported_api_version")).supported_versions, [...ACP_VERSIONS].reverse());
  const long = await post(ACP, body, acpHeaders("2026-04-17", { "idempotency-key": "k".repeat(256) }));
  await assertAcpError(long, 400, "invalid");

  // A UCP client may send a key too; a different body with it is a 409.
  const key = randomUUID();
  const u1 = await post(UCP, { line_items: [{ item: { id: "pro_yearly" } }] }, { "idempotency-key": key });
  assert.equal(u1.status, 201);
  const u2 = await post(UCP, { line_items: [{ item: { id: "pro_yearly" } }] }, { "idempotency-key": key });
  assert.equal(u2.headers.get("idempotent-replayed"), "true");
  assert.deepEqual(await u2.json(), await u1.json());
  const u3 = await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, { "idempotency-key": key });
  await assertUcpError(u3, 409, "idempotency_conflict");
});

test("bad requests: unknown or out-of-stock offer, malformed bodies, unknown sessions", async () => {
  const posts = (await sessionPosts()).length;
  let m = await assertUcpOutcome(await post(UCP, { line_items: [{ item: { id: "no_such_offer" } }] }), "unknown_offer", "recoverable");
  assert.match(m.content, /\/agent\/commerce\/products/);
  assert.equal(m.path, "$.line_items[0].id");
  let e = await assertAcpError(await post(ACP, { items: [{ id: "sensor_hub" }] }, acpHeaders("2026-01-30")), 409, "out_of_stock");
  assert.equal(e.type, "invalid_request");
  await assertUcpError(await post(UCP, "{not json"), 400, "invalid_body");
  await assertUcpError(await post(UCP, "[1,2]"), 400, "invalid_body");
  await assertUcpOutcome(await post(UCP, {}), "missing", "recoverable");
  await assertUcpOutcome(await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }, { item: { id: "sensor_node" } }] }), "invalid");
  m = await assertUcpOutcome(await post(UCP, { line_items: [{ item: { id: "pro_monthly" }, quantity: 2 }] }), "invalid");
  assert.equal(m.path, "$.line_items[0].quantity");
  e = await assertAcpError(await post(ACP, { items: [{ id: "sensor_node", quantity: "lots" }] }, acpHeaders("2025-09-29")), 400, "invalid");
  assert.equal(e.param, "$.line_items[0].quantity");
  assert.equal((await sessionPosts()).length, posts, "nothing reached Stripe Checkout");

  // An unknown UCP checkout is UCP's error response: the ucp object and a not_found message.
  await assertUcpOutcome(await get(`${UCP}/cs_test_doesnotexist`), "not_found", "unrecoverable");
  await assertUcpOutcome(await get(`${UCP}/pi_123`), "not_found", "unrecoverable");
  await assertAcpError(await get(`${ACP}/cs_test_doesnotexist`, { "api-version": "2026-04-17" }), 404, "not_found");
  const wrong = await fetch(`${BASE_URL}${UCP}`, { method: "GET" });
  await assertUcpError(wrong, 405, "method_not_allowed");
  assert.equal(wrong.headers.get("allow"), "POST");
});

test("payment credentials sent to the API are refused with the one payment path", async () => {
  const posts = (await sessionPosts()).length;
  const item = { line_items: [{ item: { id: "pro_monthly" } }] };
  const ucpCases = [
    [post(UCP, { ...item, payment: { instruments: [{ id: "instr_1", handler_id: "google_pay", credential: { token: "tok_visa" } }] } }), "$.payment"],
    [post(UCP, item, { "x-payment": "eyJ4NDAyVmVyc2lvbiI6MX0=" }), undefined],
    [post(UCP, item, { "payment-signature": "eyJ4NDAyVmVyc2lvbiI6Mn0=" }), undefined],
    [post(UCP, { ...item, ap2: { intent_mandate: { natural_language_description: "a plan" } } }), "$.ap2"],
  ];
  for (const [res, path] of ucpCases) {
    const m = await assertUcpOutcome(await res, "payment_not_accepted", "recoverable");
    assert.equal(m.path, path);
    assert.match(m.content, /hosted checkout page/);
    assert.match(m.content, /continue_url/);
  }
  const acp = await post(ACP, { items: [{ id: "pro_monthly" }], payment_data: { token: "spt_123", provider: "stripe" } }, acpHeaders("2025-09-29"));
  const e = await assertAcpError(acp, 400, "payment_not_accepted");
  assert.equal(e.param, "$.payment_data");
  assert.match(e.message, /hosted checkout page/);
  const created = await (await post(UCP, item)).json();
  const complete = await post(`${ACP}/${created.id}/complete`,
    { payment_data: { handler_id: "card", instrument: { type: "card", credential: { token: "vt_1" } } } }, acpHeaders("2026-04-17"));
  await assertAcpError(complete, 400, "payment_not_accepted");
  assert.equal((await sessionPosts()).length, posts + 1, "only the clean checkout reached Stripe");
});

test("Stripe failing → 503 with Retry-After, and a retry after recovery runs again", async () => {
  const created = await (await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] })).json();
  await control("fail", { mode: "500" });
  const products = await get("/agent/commerce/products");
  assert.equal((await assertProblem(products, 503)).code, "service_unavailable");
  assert.equal(products.headers.get("retry-after"), "10");
  const read = await get(`${UCP}/${created.id}`);
  await assertUcpError(read, 503, "service_unavailable");
  assert.equal(read.headers.get("retry-after"), "10");
  const headers = acpHeaders("2026-04-17");
  const body = { line_items: [{ id: "pro_monthly" }] };
  const down = await post(ACP, body, headers);
  assert.equal((await assertAcpError(down, 503, "service_unavailable")).type, "service_unavailable");
  assert.equal(down.headers.get("retry-after"), "10");
  await control("fail", { mode: "none" });
  const retry = await post(ACP, body, headers);
  assert.equal(retry.status, 201, "a 5xx is never replayed");
  assert.equal(retry.headers.get("idempotent-replayed"), null);
});

test("Stripe not answering → 503 after the request timeout", async () => {
  await control("fail", { mode: "timeout", count: 1 });
  const res = await get("/agent/commerce/products");
  const p = await assertProblem(res, 503);
  assert.match(p.detail, /did not answer/);
  assert.equal(res.headers.get("retry-after"), "10");
});

test("MCP: list_products, create_checkout (id and link only), get_checkout", async () => {
  const call = async (name, args) =>
    (await (await mcp({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } })).json()).result;
  const list = await call("list_products", {});
  assert.equal(list.isError, false);
  assert.ok(list.structuredContent.offers.some((o) => o.id === "pro_monthly"));
  const created = await call("create_checkout", { offer_id: "pro_monthly" });
  assert.equal(created.isError, false);
  assert.deepEqual(Object.keys(created.structuredContent).sort(), ["continue_url", "id"]);
  const { id, continue_url } = created.structuredContent;
  assert.equal(continue_url, `${FAKE}/c/pay/${id}`);
  assert.deepEqual(JSON.parse(created.content[0].text), created.structuredContent);
  assert.equal((await sessionPosts()).at(-1).form.metadata.presence_protocol, "mcp");
  const got = await call("get_checkout", { id });
  assert.equal(got.isError, false);
  assert.equal(got.structuredContent.status, "requires_escalation");
  assert.equal(got.structuredContent.continue_url, continue_url);
  assert.deepEqual(got.structuredContent.total, { amount: 900, currency: "usd", display: "$9.00" });
  const bad = await call("create_checkout", { offer_id: "sensor_hub" });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /not available/);
  const pay = await call("create_checkout", { offer_id: "pro_monthly", payment_data: { token: "spt_1" } });
  assert.equal(pay.isError, true);
  assert.match(pay.content[0].text, /continue_url/);
});

test("commerce responses match the OpenAPI document", async () => {
  const doc = await (await get("/openapi.json")).json();
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema(doc, "openapi");
  const check = (ref, value) => {
    const validate = ajv.getSchema(`openapi#/components/schemas/${ref}`);
    assert.ok(validate(value), `${ref}: ${JSON.stringify(validate.errors)}`);
  };
  check("Products", await (await get("/agent/commerce/products")).json());
  const ucp = await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] });
  assert.ok(doc.paths[UCP].post.responses[String(ucp.status)]);
  check("Checkout", await ucp.json());
  const acp = await post(ACP, { items: [{ id: "sensor_node" }] }, acpHeaders("2025-09-29"));
  check("Checkout", await acp.json());
  const bad = await post(UCP, { line_items: [{ item: { id: "nope" } }] });
  assert.equal(bad.status, 200);
  check("UcpErrorResponse", await bad.json());
  const acpBad = await post(ACP, { items: [{ id: "nope" }] }, acpHeaders("2026-04-17"));
  assert.ok(doc.paths[ACP].post.responses[String(acpBad.status)]);
  check("AcpError", await acpBad.json());
  const ucpBad = await post(UCP, "{");
  assert.ok(doc.paths[UCP].post.responses[String(ucpBad.status)]);
  check("UcpError", await ucpBad.json());
});

// Every failure path of ACP and UCP, one test per row of the edge README's failure table (the
// last test keeps the table and these cases equal). Rows whose trigger needs the Stripe fake's
// failure hooks, the limiter or a scripted store are tested elsewhere and named in the table.
const sessions = {};
async function openSession() {
  sessions.open ??= (await (await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] })).json()).id;
  return sessions.open;
}
async function canceledSession() {
  if (!sessions.canceled) {
    const id = (await (await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] })).json()).id;
    assert.equal((await post(`${UCP}/${id}/cancel`, {})).status, 200);
    sessions.canceled = id;
  }
  return sessions.canceled;
}
const acpNew = (extra) => acpHeaders("2026-04-17", extra);
const BIG = JSON.stringify({ line_items: [{ item: { id: "pro_monthly" } }], pad: "x".repeat(300 * 1024) });
const FAILURES = [
  // [protocol, failure, status, code, UCP severity, request]
  ["ACP", "API-Version missing", 400, "missing_api_version", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }] }, { "idempotency-key": randomUUID() })],
  ["ACP", "API-Version unknown", 400, "unsupported_api_version", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }] }, acpHeaders("2099-01-01"))],
  ["ACP", "Idempotency-Key missing on a POST", 400, "idempotency_key_required", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }] }, { "api-version": "2026-04-17" })],
  ["ACP", "Idempotency-Key malformed", 400, "invalid", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }] }, acpNew({ "idempotency-key": "k".repeat(256) }))],
  ["ACP", "body not JSON", 400, "invalid_body", null, () => post(ACP, "{oops", acpNew())],
  ["ACP", "body not an object", 400, "invalid_body", null, () => post(ACP, "[1]", acpNew())],
  ["ACP", "no line item", 400, "missing", null, () => post(ACP, {}, acpNew())],
  ["ACP", "more than one line item", 400, "invalid", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }, { id: "sensor_node" }] }, acpNew())],
  ["ACP", "quantity out of range", 400, "invalid", null, () => post(ACP, { line_items: [{ id: "sensor_node", quantity: 0 }] }, acpNew())],
  ["ACP", "currency malformed", 400, "invalid", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }], currency: "dollars" }, acpNew())],
  ["ACP", "buyer email malformed", 400, "invalid", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }], buyer: { email: "nope" } }, acpNew())],
  ["ACP", "unknown offer", 422, "unknown_offer", null, () => post(ACP, { line_items: [{ id: "no_such_offer" }] }, acpNew())],
  ["ACP", "offer out of stock", 409, "out_of_stock", null, () => post(ACP, { line_items: [{ id: "sensor_hub" }] }, acpNew())],
  ["ACP", "payment data in the body", 400, "payment_not_accepted", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }], payment_data: { token: "spt_1" } }, acpNew())],
  ["ACP", "payment header (x402)", 400, "payment_not_accepted", null, () => post(ACP, { line_items: [{ id: "pro_monthly" }] }, acpNew({ "x-payment": "eyJ4In0=" }))],
  ["ACP", "Idempotency-Key reused with another body", 422, "idempotency_conflict", null, async () => {
    const h = acpNew();
    assert.equal((await post(ACP, { line_items: [{ id: "pro_monthly" }] }, h)).status, 201);
    return post(ACP, { line_items: [{ id: "pro_yearly" }] }, h);
  }],
  ["ACP", "unknown checkout session", 404, "not_found", null, () => get(`${ACP}/cs_test_doesnotexist`, { "api-version": "2026-04-17" })],
  ["ACP", "unknown endpoint", 404, "not_found", null, async () => post(`${ACP}/${await openSession()}/pay`, {}, acpNew())],
  ["ACP", "method not allowed", 405, "method_not_allowed", null, () => fetch(`${BASE_URL}${ACP}`, { method: "DELETE", headers: { "api-version": "2026-04-17" } })],
  ["ACP", "update changes the items", 409, "line_items_fixed", null, async () => post(`${ACP}/${await openSession()}`, { line_items: [{ id: "pro_yearly" }] }, acpNew())],
  ["ACP", "complete a canceled session", 409, "checkout_canceled", null, async () => post(`${ACP}/${await canceledSession()}/complete`, {}, acpNew())],
  ["ACP", "cancel a final session", 405, "checkout_not_cancelable", null, async () => post(`${ACP}/${await canceledSession()}/cancel`, {}, acpNew())],
  ["ACP", "body over 256 KiB", 413, "request_too_large", null, () => post(ACP, BIG, acpNew())],
  ["UCP", "body not JSON", 400, "invalid_body", null, () => post(UCP, "{oops")],
  ["UCP", "body not an object", 400, "invalid_body", null, () => post(UCP, "[1]")],
  ["UCP", "Idempotency-Key malformed", 400, "invalid", null, () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, { "idempotency-key": "k".repeat(256) })],
  ["UCP", "Idempotency-Key reused with another body", 409, "idempotency_conflict", null, async () => {
    const h = { "idempotency-key": randomUUID() };
    assert.equal((await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, h)).status, 201);
    return post(UCP, { line_items: [{ item: { id: "pro_yearly" } }] }, h);
  }],
  ["UCP", "no line item", 200, "missing", "recoverable", () => post(UCP, {})],
  ["UCP", "more than one line item", 200, "invalid", "recoverable", () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }, { item: { id: "sensor_node" } }] })],
  ["UCP", "quantity out of range", 200, "invalid", "recoverable", () => post(UCP, { line_items: [{ item: { id: "sensor_node" }, quantity: 0 }] })],
  ["UCP", "currency malformed", 200, "invalid", "recoverable", () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }], currency: "dollars" })],
  ["UCP", "buyer email malformed", 200, "invalid", "recoverable", () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }], buyer: { email: "nope" } })],
  ["UCP", "unknown offer", 200, "unknown_offer", "recoverable", () => post(UCP, { line_items: [{ item: { id: "no_such_offer" } }] })],
  ["UCP", "offer out of stock", 200, "out_of_stock", "recoverable", () => post(UCP, { line_items: [{ item: { id: "sensor_hub" } }] })],
  ["UCP", "payment data in the body", 200, "payment_not_accepted", "recoverable", () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }], payment: { instruments: [{ id: "i" }] } })],
  ["UCP", "payment header (x402)", 200, "payment_not_accepted", "recoverable", () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, { "payment-signature": "eyJ4In0=" })],
  ["UCP", "unknown checkout session", 200, "not_found", "unrecoverable", () => get(`${UCP}/cs_test_doesnotexist`)],
  ["UCP", "unknown endpoint", 404, "not_found", null, async () => post(`${UCP}/${await openSession()}/pay`, {})],
  ["UCP", "method not allowed", 405, "method_not_allowed", null, () => fetch(`${BASE_URL}${UCP}`, { method: "DELETE" })],
  ["UCP", "update changes the items", 200, "line_items_fixed", "recoverable", async () => fetch(`${BASE_URL}${UCP}/${await openSession()}`, {
    method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ line_items: [{ item: { id: "pro_yearly" } }] }),
  })],
  ["UCP", "complete a canceled session", 200, "checkout_canceled", "unrecoverable", async () => post(`${UCP}/${await canceledSession()}/complete`, {})],
  ["UCP", "cancel a final session", 200, "checkout_not_cancelable", "unrecoverable", async () => post(`${UCP}/${await canceledSession()}/cancel`, {})],
  ["UCP", "body over 256 KiB", 413, "request_too_large", null, () => post(UCP, BIG)],
  ["UCP", "UCP-Agent profile not on a public https host", 400, "invalid_profile_url", null, () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, { "ucp-agent": 'profile="https://127.0.0.1/profile.json"' })],
  ["UCP", "platform profile unreachable (error status, timeout)", 424, "profile_unreachable", null, () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, agentHeader("gone.json"))],
  ["UCP", "platform profile not a UCP profile", 422, "profile_malformed", null, () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, agentHeader("not-a-profile.json"))],
  ["UCP", "platform speaks another UCP version", 422, "version_unsupported", null, () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, agentHeader("2026-01-11.json"))],
  // A platform that speaks UCP 2026-01-23: every failure is an HTTP error with that version's
  // body (the README's rows named "2026-01-23: …").
  ["UCP", "2026-01-23: body not JSON", 400, "invalid_body", "recoverable", () => post(UCP, "{oops", OLD())],
  ["UCP", "2026-01-23: Idempotency-Key malformed", 400, "invalid", "recoverable", () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, { ...OLD(), "idempotency-key": "k".repeat(256) })],
  ["UCP", "2026-01-23: Idempotency-Key reused with another body", 409, "idempotency_conflict", "recoverable", async () => {
    const h = { ...OLD(), "idempotency-key": randomUUID() };
    assert.equal((await post(UCP, { line_items: [{ item: { id: "pro_monthly" } }] }, h)).status, 201);
    return post(UCP, { line_items: [{ item: { id: "pro_yearly" } }] }, h);
  }],
  ["UCP", "2026-01-23: no line item", 400, "missing", "recoverable", () => post(UCP, {}, OLD())],
  ["UCP", "2026-01-23: quantity out of range", 400, "invalid", "recoverable", () => post(UCP, { line_items: [{ item: { id: "sensor_node" }, quantity: 0 }] }, OLD())],
  ["UCP", "2026-01-23: unknown offer", 422, "unknown_offer", "recoverable", () => post(UCP, { line_items: [{ item: { id: "no_such_offer" } }] }, OLD())],
  ["UCP", "2026-01-23: offer out of stock", 409, "out_of_stock", "recoverable", () => post(UCP, { line_items: [{ item: { id: "sensor_hub" } }] }, OLD())],
  ["UCP", "2026-01-23: payment data in the body", 400, "payment_not_accepted", "recoverable", () => post(UCP, { line_items: [{ item: { id: "pro_monthly" } }], payment: { instruments: [{ id: "i" }] } }, OLD())],
  ["UCP", "2026-01-23: unknown checkout session", 404, "not_found", "recoverable", () => get(`${UCP}/cs_test_doesnotexist`, OLD())],
  ["UCP", "2026-01-23: unknown endpoint", 404, "not_found", "recoverable", async () => post(`${UCP}/${await openSession()}/pay`, {}, OLD())],
  ["UCP", "2026-01-23: method not allowed", 405, "method_not_allowed", "recoverable", () => fetch(`${BASE_URL}${UCP}`, { method: "DELETE", headers: OLD() })],
  ["UCP", "2026-01-23: update changes the items", 409, "line_items_fixed", "recoverable", async () => fetch(`${BASE_URL}${UCP}/${await openSession()}`, {
    method: "PUT", headers: { "content-type": "application/json", ...OLD() }, body: JSON.stringify({ line_items: [{ item: { id: "pro_yearly" } }] }),
  })],
  ["UCP", "2026-01-23: complete a canceled session", 409, "checkout_canceled", "recoverable", async () => post(`${UCP}/${await canceledSession()}/complete`, {}, OLD())],
  ["UCP", "2026-01-23: cancel a final session", 405, "checkout_not_cancelable", "recoverable", async () => post(`${UCP}/${await canceledSession()}/cancel`, {}, OLD())],
  ["UCP", "2026-01-23: body over 256 KiB", 413, "request_too_large", null, () => post(UCP, BIG, OLD())],
];

let openapi;
for (const [proto, failure, status, code, severity, send] of FAILURES) {
  test(`failure table: ${proto} ${failure} → ${status} ${code}`, async () => {
    openapi ??= await (await get("/openapi.json")).json();
    const documented = openapi.paths[proto === "ACP" ? ACP : UCP].post.responses;
    assert.ok(documented[String(status)], `OpenAPI documents ${status} for ${proto}`);
    const res = await send();
    if (proto === "ACP") await assertAcpError(res, status, code);
    else if (status === 200) await assertUcpOutcome(res, code, severity);
    // Refused before routing, so before a version is agreed: the current version's shape.
    else if (failure.startsWith("2026-01-23") && status !== 413) await assertUcpLegacyError(res, status, code, severity);
    else await assertUcpError(res, status, code);
    if (status === 405) assert.ok(res.headers.get("allow"), "a 405 names the methods allowed");
  });
}

test("the README's failure table and these tests agree, row for row", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("#### Failure table"));
  const table = section.slice(0, section.indexOf("\n#", 1));
  const rows = table.split("\n").filter((l) => /^\| (ACP|UCP|MCP) \|/.test(l))
    .map((l) => l.split(" | ").map((c) => c.replace(/^\| ?|`| ?\|$/g, "").trim()));
  assert.ok(rows.length > FAILURES.length, "the table has rows");
  const here = rows.filter((r) => r[5] === "failure table loop");
  assert.deepEqual(
    here.map(([p, f, st, c]) => `${p} ${f} → ${st} ${c}`).sort(),
    FAILURES.map(([p, f, st, c]) => `${p} ${f} → ${st} ${c}`).sort(),
  );
  for (const [p, f, , , , where] of rows.filter((r) => r[5] !== "failure table loop")) {
    const m = where.match(/^(\S+): (.+)$/);
    assert.ok(m, `${p} ${f}: test column "${where}"`);
    const text = readFileSync(new URL(`../${m[1]}`, import.meta.url), "utf8");
    assert.ok(text.includes(m[2]), `${p} ${f}: ${m[1]} has no "${m[2]}"`);
  }
});

test("the schema client validated this file's ACP and UCP traffic", () => {
  // helpers.mjs routes every fetch through clients/protocols.mjs; if that hook stopped, the
  // tests above would pass without a single schema check.
  assert.ok(seen.acp >= 40, `ACP responses validated: ${seen.acp}`);
  assert.ok(seen.ucp >= 40, `UCP responses validated: ${seen.ucp}`);
});
