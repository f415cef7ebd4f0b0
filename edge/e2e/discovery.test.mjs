// Discovery documents: media types, caching, CORS, HEAD, shapes, and the OpenAPI document
// checked against real responses.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import Ajv2020 from "ajv/dist/2020.js";
import { BASE_URL, get, mcp } from "./helpers.mjs";
import { seen } from "./clients/protocols.mjs";

const DOCS = {
  "/agent/site.json": "application/json",
  "/openapi.json": "application/openapi+json",
  "/auth.md": "text/markdown; charset=utf-8",
  "/llms.txt": "text/markdown; charset=utf-8",
  "/robots.txt": "text/plain; charset=utf-8",
  "/sitemap.xml": "application/xml; charset=utf-8",
  "/.well-known/mcp/server-card.json": "application/json",
  "/.well-known/mcp.json": "application/json",
  "/mcp/server-card": "application/mcp-server-card+json",
  "/.well-known/ai-catalog.json": "application/ai-catalog+json",
  "/.well-known/api-catalog": 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"',
  "/.well-known/agent-skills/index.json": "application/json",
  "/.well-known/ucp": "application/json",
  "/.well-known/ucp/2026-01-23": "application/json",
  "/.well-known/acp.json": "application/json",
  "/.well-known/agent-card.json": "application/json",
  "/agent/skills/buy-products/SKILL.md": "text/markdown; charset=utf-8",
  "/.well-known/http-message-signatures-directory": "application/http-message-signatures-directory+json",
};

test("every discovery document: type, CORS, Cache-Control, ETag/304 and HEAD", async () => {
  for (const [path, type] of Object.entries(DOCS)) {
    const res = await get(path);
    assert.equal(res.status, 200, path);
    assert.equal(res.headers.get("content-type"), type, path);
    assert.equal(res.headers.get("access-control-allow-origin"), "*", path);
    assert.match(res.headers.get("cache-control"), /public, max-age=\d+/, path);
    const etag = res.headers.get("etag");
    assert.ok(etag, path);
    await res.arrayBuffer();
    const cached = await get(path, { "if-none-match": etag });
    assert.equal(cached.status, 304, path);
    const head = await fetch(`${BASE_URL}${path}`, { method: "HEAD" });
    assert.equal(head.status, 200, path);
    assert.equal(head.headers.get("content-type"), type, path);
    assert.equal((await head.arrayBuffer()).byteLength, 0, path);
  }
});

test("site.json links every discovery document", async () => {
  const body = await (await get("/agent/site.json")).json();
  const links = Object.values(body.links);
  for (const path of Object.keys(DOCS)) {
    if (path === "/agent/site.json" || path === "/.well-known/mcp.json") continue;
    assert.ok(links.includes(`${BASE_URL}${path}`), `site.json lacks ${path}`);
  }
  assert.deepEqual(body.tools, ["site_info", "search_pages", "read_page", "list_products", "create_checkout", "get_checkout"]);
});

test("A2A agent card: valid A2A 1.0, honest skills, linked from the other documents", async () => {
  // The body is validated against the A2A 1.0 AgentCard schema by clients/protocols.mjs.
  const before = seen.a2a;
  const card = await (await get("/.well-known/agent-card.json")).json();
  assert.equal(seen.a2a, before + 1, "the card went through the A2A schema");
  assert.deepEqual(card.supportedInterfaces.map((i) => i.url), [`${BASE_URL}/mcp`]);
  assert.deepEqual(card.skills.map((s) => s.id), ["search", "read", "offers", "checkout"]);
  assert.equal(card.capabilities.streaming, false);
  assert.match(card.description, /no A2A task endpoint/);
  const checkout = card.skills.find((s) => s.id === "checkout");
  assert.match(checkout.description, /continue_url/);
  const url = `${BASE_URL}/.well-known/agent-card.json`;
  const site = await (await get("/agent/site.json")).json();
  assert.equal(site.links.a2a_agent_card, url);
  assert.ok((await (await get("/llms.txt")).text()).includes(url), "llms.txt links the card");
  const catalog = await (await get("/.well-known/api-catalog")).json();
  assert.ok(catalog.linkset.some((l) => (l["service-meta"] ?? []).some((m) => m.href === url)), "api-catalog links the card");
});

test("api-catalog is an RFC 9727 linkset", async () => {
  const body = await (await get("/.well-known/api-catalog")).json();
  assert.ok(Array.isArray(body.linkset));
  assert.equal(body.linkset[0]["service-desc"][0].href, `${BASE_URL}/openapi.json`);
});

test("MCP server cards and AI catalog have their required fields", async () => {
  const card = await (await get("/.well-known/mcp/server-card.json")).json();
  assert.equal(card.$schema, "https://static.modelcontextprotocol.io/schemas/mcp-server-card/v1.json");
  assert.equal(card.transport.type, "streamable-http");
  assert.equal(card.transport.endpoint, `${BASE_URL}/mcp`);
  assert.equal(card.authentication.required, false);
  assert.ok(card.tools.length >= 1);
  const card2 = await (await get("/mcp/server-card")).json();
  assert.equal(card2.$schema, "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json");
  assert.equal(card2.name.split("/").length, 2);
  assert.equal(card2.remotes[0].url, `${BASE_URL}/mcp`);
  const cat = await (await get("/.well-known/ai-catalog.json")).json();
  assert.equal(cat.specVersion, "1.0");
  assert.equal(cat.entries[0].url, `${BASE_URL}/mcp/server-card`);
});

test("UCP profile and ACP manifest point at the checkout endpoints", async () => {
  const ucp = (await (await get("/.well-known/ucp")).json()).ucp;
  assert.equal(ucp.version, "2026-04-08");
  assert.deepEqual(ucp.payment_handlers, {});
  const svc = ucp.services["dev.ucp.shopping"][0];
  assert.equal(svc.transport, "rest");
  assert.equal(svc.endpoint, `${BASE_URL}/agent/commerce/ucp`);
  assert.equal(ucp.capabilities["dev.ucp.shopping.checkout"][0].version, "2026-04-08");
  const acp = await (await get("/.well-known/acp.json")).json();
  assert.equal(acp.protocol.name, "acp");
  assert.deepEqual(acp.protocol.supported_versions, ["2025-09-29", "2025-12-12", "2026-01-16", "2026-01-30", "2026-04-17"]);
  assert.equal(acp.protocol.version, "2026-04-17");
  assert.equal(acp.api_base_url, `${BASE_URL}/agent/commerce/acp`);
  assert.deepEqual(acp.capabilities.services, ["checkout"]);
  assert.deepEqual(acp.transports, ["rest"]);
  assert.equal(JSON.stringify(acp).includes("payment"), false, "no payment configuration");
});

test("skills index digest matches the served SKILL.md", async () => {
  const idx = await (await get("/.well-known/agent-skills/index.json")).json();
  const skill = idx.skills[0];
  assert.equal(skill.name, "buy-products");
  assert.equal(skill.type, "skill-md");
  const md = await (await get(skill.url)).text();
  assert.match(md, /^---\nname: buy-products\ndescription: /);
  const digest = createHash("sha256").update(md).digest("hex");
  assert.equal(skill.digest, `sha256:${digest}`);
});

test("robots.txt, llms.txt, auth.md and sitemap say what agents need", async () => {
  const robots = await (await get("/robots.txt")).text();
  assert.match(robots, /User-agent: GPTBot/);
  assert.match(robots, /Content-Signal: search=yes, ai-input=yes, ai-train=no/);
  assert.match(robots, new RegExp(`Sitemap: ${BASE_URL}/sitemap.xml`));
  const llms = await (await get("/llms.txt")).text();
  assert.match(llms, /^# Presence sensing\n\n> /);
  const auth = await (await get("/auth.md")).text();
  assert.match(auth, /anonymous/);
  assert.match(auth, /429/);
  assert.match(auth, /Web Bot Auth/);
  const sitemap = await (await get("/sitemap.xml")).text();
  assert.match(sitemap, new RegExp(`<loc>${BASE_URL}/pricing</loc>`));
});

test("real responses match the OpenAPI document", async () => {
  const doc = await (await get("/openapi.json")).json();
  assert.equal(doc.openapi, "3.1.0");
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  ajv.addSchema(doc, "openapi");
  const check = (ref, value) => {
    const validate = ajv.getSchema(`openapi#/components/schemas/${ref}`);
    assert.ok(validate, ref);
    assert.ok(validate(value), `${ref}: ${JSON.stringify(validate.errors)}`);
  };
  const responseType = (path, method, status) =>
    Object.keys(doc.paths[path][method].responses[String(status)].content ?? {});

  const search = await get("/agent/search?q=pricing");
  assert.deepEqual(responseType("/agent/search", "get", 200), [search.headers.get("content-type")]);
  check("SearchResults", await search.json());

  const bad = await get("/agent/search?q=");
  assert.deepEqual(responseType("/agent/search", "get", 400), [bad.headers.get("content-type")]);
  check("Problem", await bad.json());

  const missing = await get("/agent/read?path=/nope");
  assert.equal(missing.status, 404);
  check("Problem", await missing.json());

  const read = await get("/agent/read?path=/pricing");
  assert.ok(responseType("/agent/read", "get", 200)[0].startsWith("text/markdown"));
  assert.match(read.headers.get("content-type"), /^text\/markdown/);

  check("SiteInfo", await (await get("/agent/site.json")).json());

  const rpc = await mcp({ jsonrpc: "2.0", id: 1, method: "ping" });
  check("JsonRpcResponse", await rpc.json());
  const rpcErr = await mcp("{not json");
  assert.equal(rpcErr.status, 400);
  check("JsonRpcResponse", await rpcErr.json());
  for (const path of ["/agent/search", "/agent/read", "/agent/site.json"]) {
    assert.ok(doc.paths[path].get.responses["429"], `${path} documents 429`);
  }
});
