// Shared helpers for the edge end-to-end tests. BASE_URL is set by the test command; a missing
// BASE_URL is a failure, never a skip.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { checkResponse, protocolOf } from "./clients/protocols.mjs";

export const BASE_URL = process.env.BASE_URL;
assert.ok(BASE_URL, "BASE_URL must point at `wrangler dev` (the test command starts it)");

// Every response of the ACP, UCP and MCP routes that any e2e suite receives is checked against
// the protocol's published schema (clients/protocols.mjs) before the test sees it: a body that
// strays from its spec fails the test that asked for it, with the schema errors.
const plainFetch = globalThis.fetch;
globalThis.fetch = async (input, init = {}) => {
  const res = await plainFetch(input, init);
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  if (url.origin === new URL(BASE_URL).origin && protocolOf(url.pathname)) {
    const text = await res.clone().text();
    checkResponse(
      { method: (init.method ?? "GET").toUpperCase(), path: url.pathname, headers: init.headers, body: init.body },
      { status: res.status, headers: res.headers, text },
    );
  }
  return res;
};

// Requests from loopback skip the limiter in wrangler dev (RATE_LIMIT_EXEMPT in edge/.dev.vars),
// so most tests can send several requests a second. A test that exercises the limiter sends a
// CF-Connecting-IP of its own, unique per test and per run, because every e2e file shares one
// wrangler instance (and its Durable Objects).
export function uniqueClientIp() {
  return `2001:db8:${randomBytes(2).toString("hex")}:${randomBytes(2).toString("hex")}::${randomBytes(2).toString("hex")}`;
}

export async function get(path, headers = {}) {
  return fetch(`${BASE_URL}${path}`, { headers });
}

export async function mcp(body, headers = {}) {
  return fetch(`${BASE_URL}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

export async function assertProblem(res, status) {
  assert.equal(res.status, status);
  assert.equal(res.headers.get("content-type"), "application/problem+json");
  const body = await res.json();
  assert.equal(body.status, status);
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.detail, "string");
  assert.equal(body.request_id, res.headers.get("x-request-id"));
  assert.equal(typeof body.instance, "string");
  return body;
}

// The protocols' own error shapes (the schemas are checked on every response already; these
// pin the status and code a test expects).

/** ACP's flat Error object: `{type, code, message, param?}`. */
export async function assertAcpError(res, status, code) {
  assert.equal(res.status, status);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.ok(["invalid_request", "processing_error", "service_unavailable"].includes(body.type), body.type);
  assert.equal(body.code, code);
  assert.equal(typeof body.message, "string");
  return body;
}

/** A UCP protocol error: the HTTP status with `{code, content}`. */
export async function assertUcpError(res, status, code) {
  assert.equal(res.status, status);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.equal(body.code, code);
  assert.equal(typeof body.content, "string");
  return body;
}

/** A UCP business outcome without a checkout: HTTP 200, `ucp.status: "error"`, one message. */
export async function assertUcpOutcome(res, code, severity) {
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.ucp.status, "error");
  const [m] = body.messages;
  assert.equal(m.type, "error");
  assert.equal(m.code, code);
  if (severity) assert.equal(m.severity, severity);
  return m;
}

/**
 * A UCP 2026-01-23 failure: the HTTP status with `{ucp, status: "requires_escalation",
 * messages}` (that version has no error response and no `{code, content}` body).
 */
export async function assertUcpLegacyError(res, status, code, severity) {
  assert.equal(res.status, status);
  assert.equal(res.headers.get("content-type"), "application/json");
  const body = await res.json();
  assert.equal(body.status, "requires_escalation");
  assert.equal(body.ucp.version, "2026-01-23");
  assert.equal(body.code, undefined, "no 2026-04-08 protocol-error body");
  const [m] = body.messages;
  assert.equal(m.type, "error");
  assert.equal(m.code, code);
  if (severity) assert.equal(m.severity, severity);
  return m;
}
