// Zero-dependency client for the companion integration platform. Uses only `fetch`, WebCrypto,
// `atob` and `TextEncoder`, so it runs on Node 18+, Deno, Bun, Workers and browsers.

export const VERSION = "1.0.0";
const DEFAULT_BASE_URL = "https://platform.example.com";
const RETRY_STATUSES = new Set([429, 503]);

/** Error carrying the fields of an RFC 9457 problem response (or of a local failure). */
export class CompanionError extends Error {
  constructor(status, problem = {}) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.name = "CompanionError";
    this.status = status;
    this.code = problem.code ?? null;
    this.detail = problem.detail ?? null;
    this.requestId = problem.request_id ?? null;
    this.retryAfter = problem.retry_after ?? null;
    this.connectUrl = problem.connect_url ?? null;
    this.errors = Array.isArray(problem.errors) ? problem.errors : [];
    // Everything the server said (e.g. `app`, `run_id`, `upstream_status`), as sent.
    this.problem = problem;
  }
}

/** A webhook whose signature, timestamp or headers do not check out. */
export class WebhookVerificationError extends Error {
  constructor(message) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

function envVar(name) {
  // `process` does not exist in browsers and Workers (without nodejs_compat); there the key and
  // base URL must be passed explicitly.
  try {
    return typeof process !== "undefined" && process.env ? process.env[name] : undefined;
  } catch {
    return undefined;
  }
}

const defaultSleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

const seg = (s) => encodeURIComponent(String(s));

/** `Retry-After` as seconds: delta-seconds or an HTTP date; null when absent or unusable. */
function parseRetryAfter(value, nowMs) {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}

export class Client {
  /**
   * @param {object} [options]
   * @param {string} [options.apiKey] defaults to COMPANION_API_KEY where an environment exists
   * @param {string} [options.baseUrl] defaults to COMPANION_BASE_URL, then the hosted platform
   */
  constructor({
    apiKey,
    baseUrl,
    fetch: fetchImpl,
    timeoutMs = 30_000,
    maxRetries = 3,
    maxRetryDelayMs = 60_000,
    retryBaseDelayMs = 500,
    userAgent,
    sleep,
  } = {}) {
    // Not enumerable: a client printed with console.log or JSON.stringify never shows the key.
    Object.defineProperty(this, "apiKey", {
      value: apiKey ?? envVar("COMPANION_API_KEY"),
      enumerable: false,
      writable: true,
    });
    this.baseUrl = (baseUrl ?? envVar("COMPANION_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    if (!fetchImpl && typeof globalThis.fetch !== "function") throw new TypeError("No fetch available: pass options.fetch.");
    // Looked up per call (not bound once) so a fetch patched later, as test tools do, is used.
    this.fetch = fetchImpl ?? ((...args) => globalThis.fetch(...args));
    this.timeoutMs = timeoutMs;
    this.maxRetries = maxRetries;
    this.maxRetryDelayMs = maxRetryDelayMs;
    this.retryBaseDelayMs = retryBaseDelayMs;
    this.userAgent = userAgent ?? `companion-js/${VERSION}`;
    this.sleep = sleep ?? defaultSleep;
  }

  toJSON() {
    return { baseUrl: this.baseUrl };
  }

  // --- catalog and apps -----------------------------------------------------------------------

  /** `GET /health` (no key needed). */
  health() {
    return this.request("GET", "/health", undefined, { auth: false });
  }

  /** One page of the public app catalog (no key needed). */
  catalog({ category, cursor, limit } = {}) {
    return this.request("GET", `/catalog${query({ category, cursor, limit })}`, undefined, { auth: false });
  }

  /** Every app of the catalog, page after page. */
  iterCatalog({ category, limit } = {}) {
    return this.#iterate("apps", (cursor) => this.catalog({ category, cursor, limit }));
  }

  /** One page of apps with this account's connection status; `search` filters by words. */
  apps({ search, cursor, limit } = {}) {
    return this.request("GET", `/apps${query({ search, cursor, limit })}`);
  }

  iterApps({ search, limit } = {}) {
    return this.#iterate("apps", (cursor) => this.apps({ search, cursor, limit }));
  }

  /**
   * One app by its slug, an alias or title ("gh", "google sheets") or an id an earlier catalog gave
   * one of its documents; the answer names the canonical app (`id`), with its documents and auth.
   */
  getApp(app) {
    return this.request("GET", `/apps/${seg(app)}`);
  }

  // --- connections ----------------------------------------------------------------------------

  /**
   * A one-time connect link for `app`: send the user to `url`. `redirectUrl`, where the page
   * sends the browser when done, must be `https` (plain `http` only to localhost/127.0.0.0/8/[::1]);
   * anything else is an `invalid_request` error.
   */
  connect(app, { label, redirectUrl } = {}) {
    const body = {};
    if (label !== undefined) body.label = label;
    if (redirectUrl !== undefined) body.redirect_url = redirectUrl;
    return this.request("POST", `/apps/${seg(app)}/connect`, body);
  }

  connections({ app, cursor, limit } = {}) {
    return this.request("GET", `/connections${query({ app, cursor, limit })}`);
  }

  iterConnections({ app, limit } = {}) {
    return this.#iterate("connections", (cursor) => this.connections({ app, cursor, limit }));
  }

  /** Revokes a connection and erases its secrets. */
  async deleteConnection(id) {
    await this.request("DELETE", `/connections/${seg(id)}`);
  }

  // --- tools and runs -------------------------------------------------------------------------

  /** Tools for a task in plain words, best first. */
  findTools(queryText, { app, limit } = {}) {
    const body = { query: queryText };
    if (app !== undefined) body.app = app;
    if (limit !== undefined) body.limit = limit;
    return this.request("POST", "/tools/find", body);
  }

  /**
   * One tool's detail: `method`, `path`, `server_url`, `auth` (kinds and scopes), `input_schema`
   * and `example_input`. A name an earlier catalog issued answers with the tool under its current name.
   */
  getTool(name) {
    return this.request("GET", `/tools/${seg(name)}`);
  }

  /** Runs a tool with an arguments object; `connectionId` picks a connection other than the default. */
  runTool(name, args = {}, { connectionId } = {}) {
    const body = { arguments: args };
    if (connectionId !== undefined) body.connection_id = connectionId;
    return this.request("POST", `/tools/${seg(name)}/run`, body);
  }

  /** The 25 latest runs, newest first. */
  runs() {
    return this.request("GET", "/runs");
  }

  // --- custom connectors ----------------------------------------------------------------------

  /**
   * Registers an MCP server (`{kind: "mcp", url, name?, headers?}`) or a REST API from an
   * OpenAPI document (`{kind: "rest", openapi | url, name?, base_url?, headers?}`).
   */
  createCustomConnector(spec) {
    return this.request("POST", "/custom-connectors", spec);
  }

  customConnectors({ cursor, limit } = {}) {
    return this.request("GET", `/custom-connectors${query({ cursor, limit })}`);
  }

  iterCustomConnectors({ limit } = {}) {
    return this.#iterate("custom_connectors", (cursor) => this.customConnectors({ cursor, limit }));
  }

  getCustomConnector(id) {
    return this.request("GET", `/custom-connectors/${seg(id)}`);
  }

  /** Reloads the connector's tool list from its source. */
  refreshCustomConnector(id) {
    return this.request("POST", `/custom-connectors/${seg(id)}/refresh`);
  }

  async deleteCustomConnector(id) {
    await this.request("DELETE", `/custom-connectors/${seg(id)}`);
  }

  // --- triggers and account events ------------------------------------------------------------

  /** The events triggers can listen for in one app (the platform requires the app: 400 without it). */
  triggerEvents({ app } = {}) {
    return this.request("GET", `/triggers/events${query({ app })}`);
  }

  /** A new trigger; the answer's `secret` (whsec_…) is shown only here: keep it to verify deliveries. */
  createTrigger({ app, event, webhookUrl, connectionId, filter, params }) {
    const body = { app, event, webhook_url: webhookUrl };
    if (connectionId !== undefined) body.connection_id = connectionId;
    if (filter !== undefined) body.filter = filter;
    if (params !== undefined) body.params = params;
    return this.request("POST", "/triggers", body);
  }

  triggers({ cursor, limit } = {}) {
    return this.request("GET", `/triggers${query({ cursor, limit })}`);
  }

  iterTriggers({ limit } = {}) {
    return this.#iterate("triggers", (cursor) => this.triggers({ cursor, limit }));
  }

  getTrigger(id) {
    return this.request("GET", `/triggers/${seg(id)}`);
  }

  async deleteTrigger(id) {
    await this.request("DELETE", `/triggers/${seg(id)}`);
  }

  /** Re-enables a trigger the platform disabled (e.g. after failed deliveries). */
  enableTrigger(id) {
    return this.request("POST", `/triggers/${seg(id)}/enable`);
  }

  /** Account events (`connection.expired`, `trigger.disabled`, …), newest first. */
  events({ limit } = {}) {
    return this.request("GET", `/events${query({ limit })}`);
  }

  // --- core -----------------------------------------------------------------------------------

  async *#iterate(field, fetchPage) {
    let cursor;
    do {
      const page = await fetchPage(cursor);
      for (const item of page[field] ?? []) yield item;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  /**
   * One API call: JSON in and out, problem+json errors as CompanionError, 429/503 retried with
   * backoff (honouring Retry-After) up to `maxRetries` times.
   */
  async request(method, path, body, { auth = true } = {}) {
    const headers = { accept: "application/json", "user-agent": this.userAgent };
    if (auth) {
      if (!this.apiKey) {
        throw new CompanionError(0, { code: "missing_api_key", detail: "No API key: pass apiKey or set COMPANION_API_KEY." });
      }
      headers.authorization = `Bearer ${this.apiKey}`;
    }
    if (body !== undefined) headers["content-type"] = "application/json";
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const url = `${this.baseUrl}/api/v1${path}`;

    for (let attempt = 0; ; attempt++) {
      const res = await this.#send(url, method, headers, payload);
      const text = res.text;
      let data = null;
      if (text) {
        try {
          data = JSON.parse(text);
        } catch {
          if (res.ok) throw new CompanionError(res.status, { code: "invalid_response", detail: `Response is not JSON: ${text.slice(0, 200)}` });
          data = { detail: text.slice(0, 200) };
        }
      }
      if (res.ok) return data;

      const problem = data && typeof data === "object" ? { ...data } : {};
      const retryAfter = parseRetryAfter(res.headers.get("retry-after"), Date.now());
      if (retryAfter !== null && problem.retry_after == null) problem.retry_after = retryAfter;
      const error = new CompanionError(res.status, problem);
      if (!RETRY_STATUSES.has(res.status) || attempt >= this.maxRetries) throw error;
      const delayMs = retryAfter !== null ? retryAfter * 1000 : this.#backoff(attempt);
      // A wait longer than allowed would only hold the caller up: give the error back now, with
      // `retryAfter` saying when to come back.
      if (delayMs > this.maxRetryDelayMs) throw error;
      await this.sleep(delayMs);
    }
  }

  #backoff(attempt) {
    const base = this.retryBaseDelayMs * 2 ** attempt;
    return Math.min(this.maxRetryDelayMs, base / 2 + Math.random() * (base / 2));
  }

  async #send(url, method, headers, body) {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      // The body is read under the same timer: a server that sends headers and then stalls
      // times out too.
      const res = await this.fetch(url, { method, headers, body, signal: controller.signal });
      return { status: res.status, ok: res.ok, headers: res.headers, text: await res.text() };
    } catch (e) {
      if (controller.signal.aborted) {
        throw new CompanionError(0, { code: "timeout", detail: `No response within ${this.timeoutMs} ms: ${method} ${url.split("?")[0]}` });
      }
      throw new CompanionError(0, { code: "network_error", detail: `${method} ${url.split("?")[0]} failed: ${e?.message ?? e}` });
    } finally {
      clearTimeout(timer);
    }
  }
}

// --- webhooks (Standard Webhooks) -------------------------------------------------------------

const encoder = new TextEncoder();

async function subtle() {
  if (globalThis.crypto?.subtle) return globalThis.crypto.subtle;
  // Node 18 has WebCrypto only as a module; the name is a variable so bundlers leave it alone.
  const name = "node:crypto";
  const mod = await import(name);
  return mod.webcrypto.subtle;
}

function b64decode(s) {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function header(headers, name) {
  if (!headers) return null;
  if (typeof headers.get === "function") return headers.get(name);
  for (const [k, v] of Object.entries(headers)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? v.join(",") : v;
  }
  return null;
}

function toBytes(body) {
  if (typeof body === "string") return encoder.encode(body);
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError("body must be the raw request body: a string, Uint8Array or ArrayBuffer");
}

/**
 * Verifies a trigger delivery signed per Standard Webhooks and returns its parsed payload.
 * `body` must be the raw body exactly as received. Throws WebhookVerificationError.
 * @param {object} options
 * @param {string} options.secret the trigger's `whsec_…` secret
 * @param {Headers|Record<string,string>} options.headers `webhook-id`, `webhook-timestamp`, `webhook-signature`
 * @param {string|Uint8Array|ArrayBuffer} options.body
 * @param {number} [options.toleranceSeconds=300]
 * @param {number|(() => number)} [options.now] current time in ms (tests)
 */
export async function verifyWebhook({ secret, headers, body, toleranceSeconds = 300, now } = {}) {
  if (typeof secret !== "string" || !secret) throw new TypeError("secret is required");
  const id = header(headers, "webhook-id");
  const ts = header(headers, "webhook-timestamp");
  const sigs = header(headers, "webhook-signature");
  if (!id || !ts || !sigs) throw new WebhookVerificationError("Missing webhook-id, webhook-timestamp or webhook-signature header.");
  if (!/^\d+$/.test(ts.trim())) throw new WebhookVerificationError("webhook-timestamp is not a number of seconds.");
  const nowMs = typeof now === "function" ? now() : (now ?? Date.now());
  const tsSeconds = Number(ts.trim());
  const nowSeconds = Math.floor(nowMs / 1000);
  if (tsSeconds < nowSeconds - toleranceSeconds) throw new WebhookVerificationError("Message timestamp too old.");
  if (tsSeconds > nowSeconds + toleranceSeconds) throw new WebhookVerificationError("Message timestamp too new.");

  let keyBytes;
  try {
    keyBytes = b64decode(secret.startsWith("whsec_") ? secret.slice(6) : secret);
  } catch {
    throw new TypeError("secret is not base64 (expected whsec_<base64>)");
  }
  const raw = toBytes(body);
  const prefix = encoder.encode(`${id}.${ts.trim()}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix, 0);
  signed.set(raw, prefix.length);

  const s = await subtle();
  const key = await s.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  // Several space-separated signatures during a secret rotation: any valid v1 one is enough.
  // WebCrypto's verify compares in constant time.
  for (const part of sigs.split(" ")) {
    const [version, value] = part.split(",", 2);
    if (version !== "v1" || !value) continue;
    let sig;
    try {
      sig = b64decode(value);
    } catch {
      continue;
    }
    if (await s.verify("HMAC", key, sig, signed)) {
      const text = new TextDecoder().decode(raw);
      try {
        return JSON.parse(text);
      } catch {
        throw new WebhookVerificationError("Signature is valid but the body is not JSON.");
      }
    }
  }
  throw new WebhookVerificationError("No matching signature found.");
}
