// Independent clients for the agent protocols, built from the schemas each protocol publishes
// (vendored unchanged in edge/e2e/schemas, with their licences; see its README). `checkResponse`
// validates one response of the edge's ACP, UCP or MCP routes against the published schema for
// the protocol version the request spoke, success and error alike; `helpers.mjs` runs it on every
// response the e2e suites receive, so a body that strays from a spec fails the test that got it.
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const SCHEMAS = fileURLToPath(new URL("../schemas/", import.meta.url));
export const ACP_VERSIONS = ["2025-09-29", "2025-12-12", "2026-01-16", "2026-01-30", "2026-04-17"];
const ACP_NEWEST = ACP_VERSIONS[ACP_VERSIONS.length - 1];
const MCP_MODERN = "2026-07-28";

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));

function walk(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : name.endsWith(".json") ? [path] : [];
  });
}

function newAjv() {
  // strict: false because the UCP schemas carry annotation keywords of their own (`ucp_request`,
  // `name`) that JSON Schema 2020-12 ignores.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  return ajv;
}

// The 2025-09-29 bundle declares JSON Schema 2020-12 but writes one bound in draft-04 style
// (`"minimum": 0, "exclusiveMinimum": true`, i.e. "> 0"); read it as the draft-04 meaning it has.
function draft04Bounds(node) {
  if (Array.isArray(node)) return node.map(draft04Bounds);
  if (node === null || typeof node !== "object") return node;
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, draft04Bounds(v)]));
  if (out.exclusiveMinimum === true && typeof out.minimum === "number") {
    out.exclusiveMinimum = out.minimum;
    delete out.minimum;
  }
  return out;
}

// The 2025-09-29 bundle closes CheckoutSessionBase (`additionalProperties: false`) without an
// `order` property, so its CheckoutSessionWithOrder (Base plus a required `order`) can match no
// document at all; 2025-12-12 fixed it by declaring `order` on the base. Apply that fix.
function orderOnBase(bundle) {
  const base = bundle.$defs?.CheckoutSessionBase;
  if (base?.additionalProperties === false && base.properties && !base.properties.order) {
    base.properties.order = { $ref: "#/$defs/Order" };
  }
  return bundle;
}

// ACP publishes one JSON Schema bundle per API version.
const acp = new Map(
  ACP_VERSIONS.map((v) => {
    const ajv = newAjv();
    ajv.addSchema(orderOnBase(draft04Bounds(readJson(join(SCHEMAS, "acp", v, "schema.agentic_checkout.json")))), "acp");
    return [v, ajv];
  }),
);

// UCP publishes a tree of schemas addressed by `$id`, the same `$id`s in every version, so each
// version gets its own validator. The discovery profile refers to `../schemas/ucp.json` from
// `.../schemas/discovery/profile.json`, which resolves one directory too deep
// (`https://ucp.dev/schemas/schemas/ucp.json`); mirror the tree under that prefix too, so the
// relative references inside the mirrored files resolve among themselves.
export const UCP_VERSIONS = ["2026-04-08", "2026-01-23"];
const UCP_CURRENT = UCP_VERSIONS[0];
const UCP_ROOT = "https://ucp.dev/schemas/";
const ucp = new Map(
  UCP_VERSIONS.map((version) => {
    const ajv = newAjv();
    for (const path of walk(join(SCHEMAS, "ucp", version))) {
      const schema = readJson(path);
      ajv.addSchema(schema);
      if (typeof schema.$id === "string" && schema.$id.startsWith(UCP_ROOT)) {
        ajv.addSchema({ ...schema, $id: `${UCP_ROOT}schemas/${schema.$id.slice(UCP_ROOT.length)}` });
      }
    }
    return [version, ajv];
  }),
);
// UCP 2026-04-08 defines the body of a protocol error (401, 403, 409, 429, 503, and 400/422/424
// discovery and version failures) in prose only (overview, "Error Handling": "JSON body
// containing `code` and `content`", with an optional `continue_url`); this is that sentence as
// a schema.
ucp.get("2026-04-08").addSchema({
  $id: "urn:ucp:error",
  type: "object",
  required: ["code", "content"],
  properties: { code: { type: "string", minLength: 1 }, content: { type: "string", minLength: 1 }, continue_url: { type: "string", format: "uri" } },
});
// UCP 2026-01-23 has no error response schema either: its REST binding ("Error Responses")
// says every error follows "the standard UCP error structure", `{status: "requires_escalation",
// messages: [{type: "error", code, content, severity}]}`, and its overview that every response
// carries the `ucp` object. That prose as a schema, over the version's own message_error.json
// (whose severities have no `unrecoverable`) and ucp.json (no `ucp.status`).
ucp.get("2026-01-23").addSchema({
  $id: "urn:ucp:error",
  type: "object",
  required: ["status", "messages"],
  properties: {
    ucp: { allOf: [{ $ref: "https://ucp.dev/schemas/ucp.json#/$defs/response_checkout_schema" }, { not: { required: ["status"] } }] },
    status: { const: "requires_escalation" },
    messages: { type: "array", minItems: 1, items: { $ref: "https://ucp.dev/schemas/shopping/types/message_error.json" } },
  },
});

/**
 * Platform profiles the e2e run serves, by URL, with the UCP version each declares: a request
 * naming one in `UCP-Agent` spoke that version, and its answer is checked against that
 * version's schemas. Any other request spoke the current version (an unknown profile is refused
 * before a version is agreed, in the current version's shape).
 */
const platformProfiles = new Map();
export function declarePlatformProfile(url, version) {
  if (!UCP_VERSIONS.includes(version)) throw new Error(`no UCP ${version} schemas`);
  platformProfiles.set(url, version);
}

// MCP publishes one schema per revision.
const mcp = new Map(
  ["2025-11-25", MCP_MODERN].map((v) => {
    const ajv = newAjv();
    ajv.addSchema(readJson(join(SCHEMAS, "mcp", v, "schema.json")), "mcp");
    return [v, ajv];
  }),
);

// A2A 1.0 publishes its types as protobuf (specification/a2a.proto) and no JSON Schema; the
// AgentCard schema in schemas/a2a is written from that file (ProtoJSON names, REQUIRED fields).
const a2a = newAjv();
a2a.addSchema(readJson(join(SCHEMAS, "a2a", "1.0", "agent-card.json")));

/** What was validated, by protocol; read by tests that assert the client saw traffic. */
export const seen = { acp: 0, ucp: 0, mcp: 0, a2a: 0 };

function check(ajv, ref, body, what) {
  const validate = ajv.getSchema(ref);
  if (!validate) throw new Error(`no schema ${ref}`);
  if (!validate(body)) {
    throw new Error(`${what} does not match ${ref}: ${ajv.errorsText(validate.errors, { separator: "; " })}\n${JSON.stringify(body).slice(0, 1500)}`);
  }
}

function parse(text, what) {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what}: body is not JSON: ${text.slice(0, 200)}`);
  }
}

function header(headers, name) {
  if (!headers) return undefined;
  if (typeof headers.get === "function") return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : headers[key];
}

/** Which protocol a path belongs to, or null. */
export function protocolOf(path) {
  if (path.startsWith("/agent/commerce/acp/") || path === "/.well-known/acp.json") return "acp";
  if (path.startsWith("/agent/commerce/ucp/") || path === "/.well-known/ucp" || path.startsWith("/.well-known/ucp/")) return "ucp";
  if (path === "/mcp") return "mcp";
  if (path === "/.well-known/agent-card.json") return "a2a";
  return null;
}

/**
 * Validates one response. `request` is `{method, path, headers, body}` (body as sent, a string
 * or undefined); `response` is `{status, headers, text}`. Throws with the schema errors.
 */
export function checkResponse(request, response) {
  const proto = protocolOf(request.path);
  if (!proto) return;
  const what = `${request.method} ${request.path} -> ${response.status}`;
  // Preflights, HEAD and accepted notifications carry no body.
  if (request.method === "OPTIONS" || request.method === "HEAD" || response.status === 202 || response.status === 304) {
    if (response.status === 202 && response.text !== "") throw new Error(`${what}: a 202 must have no body`);
    return;
  }
  const ct = header(response.headers, "content-type") ?? "";
  if (!ct.startsWith("application/json")) throw new Error(`${what}: content-type ${ct}, expected application/json`);
  const body = parse(response.text, what);
  seen[proto] += 1;
  if (proto === "acp") return checkAcp(request, response.status, body, what);
  if (proto === "ucp") return checkUcp(request, response.status, body, what);
  if (proto === "a2a") return check(a2a, "urn:a2a:1.0:agent-card", body, what);
  return checkMcp(request, response.status, body, what);
}

function checkAcp(request, status, body, what) {
  if (request.path === "/.well-known/acp.json") {
    return check(acp.get(ACP_NEWEST), "acp#/$defs/DiscoveryResponse", body, what);
  }
  const asked = header(request.headers, "api-version");
  const version = ACP_VERSIONS.includes(asked) ? asked : null;
  if (status >= 400) {
    // A refused version is answered in the newest version's shape (it added
    // `supported_versions`); any other error in the version the client asked for.
    return check(acp.get(version ?? ACP_NEWEST), "acp#/$defs/Error", body, what);
  }
  if (!version) throw new Error(`${what}: a success without a supported API-Version`);
  const ref = body.order ? "acp#/$defs/CheckoutSessionWithOrder" : "acp#/$defs/CheckoutSession";
  check(acp.get(version), ref, body, what);
}

/** The UCP version a request spoke: its `UCP-Agent` profile's, when the run serves that one. */
function ucpVersion(request) {
  const profile = /profile="([^"]*)"/.exec(header(request.headers, "ucp-agent") ?? "")?.[1];
  return platformProfiles.get(profile) ?? UCP_CURRENT;
}

function checkUcp(request, status, body, what) {
  const profiles = "https://ucp.dev/schemas/discovery/profile.json#/$defs/business_profile";
  if (request.path === "/.well-known/ucp") return check(ucp.get(UCP_CURRENT), profiles, body, what);
  if (request.path.startsWith("/.well-known/ucp/")) {
    // A version-specific profile (the current one's supported_versions names it).
    const version = request.path.slice("/.well-known/ucp/".length);
    if (!ucp.has(version)) throw new Error(`${what}: no UCP ${version} schemas`);
    if (status !== 200 || body?.ucp?.version !== version) throw new Error(`${what}: not the ${version} profile`);
    return check(ucp.get(version), profiles, body, what);
  }
  // A body over the size limit and the rate limiter's 429 are refused before routing, so before
  // any version is agreed (agreeing costs a profile fetch): the current version's shape.
  const version = status === 413 || status === 429 ? UCP_CURRENT : ucpVersion(request);
  const ajv = ucp.get(version);
  if (status >= 400) return check(ajv, "urn:ucp:error", body, `${what} (UCP ${version})`);
  if (body?.ucp?.version !== version) throw new Error(`${what}: answered UCP ${body?.ucp?.version}, asked ${version}`);
  if (version !== UCP_CURRENT) {
    // Before 2026-04-08 every failure is an HTTP error: a 2xx is a checkout.
    return check(ajv, "https://ucp.dev/schemas/shopping/checkout.json", body, `${what} (UCP ${version})`);
  }
  // A business outcome is a checkout, or (`ucp.status: "error"`) an error response.
  const ref = body?.ucp?.status === "error"
    ? "https://ucp.dev/schemas/shopping/types/error_response.json"
    : "https://ucp.dev/schemas/shopping/checkout.json";
  check(ajv, ref, body, what);
}

/** The MCP revision a request spoke: the stateless era when it says so, else the handshake era. */
function mcpEra(request) {
  let msg = {};
  try {
    msg = JSON.parse(request.body ?? "");
  } catch {
    // A malformed body gets a parse error, valid in either era.
  }
  const meta = msg?.params?._meta?.["io.modelcontextprotocol/protocolVersion"];
  const header_ = header(request.headers, "mcp-protocol-version");
  return { msg, era: meta === MCP_MODERN || header_ === MCP_MODERN ? MCP_MODERN : "2025-11-25" };
}

const MCP_RESULTS = {
  initialize: "InitializeResult",
  ping: "EmptyResult",
  "tools/list": "ListToolsResult",
  "tools/call": "CallToolResult",
  "server/discover": "DiscoverResult",
};

function checkMcp(request, status, body, what) {
  const { msg, era } = mcpEra(request);
  const ajv = mcp.get(era);
  if (body.error !== undefined) {
    check(ajv, "mcp#/$defs/JSONRPCErrorResponse", body, what);
    if (era === MCP_MODERN) {
      const typed = { [-32022]: "UnsupportedProtocolVersionError", [-32020]: "HeaderMismatchError" }[body.error.code];
      if (typed) check(ajv, `mcp#/$defs/${typed}`, body, what);
    }
    return;
  }
  check(ajv, "mcp#/$defs/JSONRPCResultResponse", body, what);
  const result = MCP_RESULTS[msg?.method];
  if (result) check(ajv, `mcp#/$defs/${result}`, body.result, `${what} (${msg.method})`);
}
