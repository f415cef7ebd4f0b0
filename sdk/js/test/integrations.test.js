// The integration operations end to end against the real platform: connect an app through the
// hosted OAuth flow (fake provider on loopback), list and revoke connections, run tools (a
// custom REST connector's tool against a loopback API; connection_required and invalid
// arguments), custom connectors, triggers with a real signed delivery, account events.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, CompanionError, verifyWebhook } from "../src/index.js";
import { FIXTURE_CATALOG, Platform } from "./platform.mjs";
import { Fakes, OPENAPI } from "./fakes.mjs";

const platform = new Platform();
const fakes = new Fakes();
let client;

before(async () => {
  await fakes.start();
  const oauthApps = fakes.oauthAppsFile(["slack", "github", "google_sheets", "gmail", "zoom", "stripe"]);
  const catalog = fakes.runnableCatalogFile(FIXTURE_CATALOG);
  await platform.start({ env: { OAUTH_APPS: oauthApps, CATALOG_PATH: catalog } });
  client = new Client({ apiKey: await platform.account("sdk-js-int"), baseUrl: platform.baseUrl });
});

after(async () => {
  await platform.stop();
  await fakes.stop();
});

/**
 * Connects `app` through the hosted page as a person does: the link shows a consent page (a
 * GET uses nothing up, so link previewers cannot burn it), its button POSTs → provider →
 * callback → redirect_url.
 */
async function connectApp(c, app) {
  const link = await c.connect(app, { label: "work", redirectUrl: `${fakes.url}/done` });
  const consent = await fetch(link.url);
  assert.equal(consent.status, 200);
  assert.match(await consent.text(), /<form method="post"/);
  const res = await fetch(link.url, { method: "POST", redirect: "follow" });
  const done = await res.json();
  assert.equal(done.status, "success", JSON.stringify(done));
  assert.match(done.connection_id, /^conn_/);
  return { link, connectionId: done.connection_id };
}

test("getTool shows what a run does: method, path, server, auth kinds and scopes, an example input the platform accepts", async () => {
  const fresh = new Client({ apiKey: await platform.account("sdk-js-detail"), baseUrl: platform.baseUrl });
  const tool = await fresh.getTool("slack_send_message");
  assert.equal(tool.name, "slack_send_message");
  assert.equal(tool.method, "POST");
  assert.equal(tool.path, "/api/slack_send_message");
  assert.equal(tool.server_url, fakes.url);
  assert.deepEqual(tool.auth, [{ kind: "oauth2", scopes: ["write"], schemes: ["oauth"] }]);
  assert.deepEqual(Object.keys(tool.example_input.body).sort(), ["channel", "text"]);
  // Kinds and scopes only: the OAuth client's secret is nowhere in the detail.
  assert.ok(!JSON.stringify(tool).includes("secret_slack"), JSON.stringify(tool));
  // The example passes the platform's own argument check: the run stops at the missing
  // connection, not at invalid arguments.
  const err = await fresh.runTool(tool.name, tool.example_input).catch((e) => e);
  assert.ok(err instanceof CompanionError, String(err));
  assert.equal(err.code, "connection_required", JSON.stringify(err.body ?? err.detail));
  // A list tool reads (GET), the same way.
  const list = await fresh.getTool("slack_list_channels");
  assert.equal(list.method, "GET");
  assert.equal(list.path, "/api/slack_list_channels");
});

test("connect returns a one-time link; completing it creates a listed connection; delete revokes it", async () => {
  const { link, connectionId } = await connectApp(client, "slack");
  assert.match(link.id, /^cl_/);
  assert.equal(link.app, "slack");
  assert.equal(link.auth, "oauth2");
  assert.ok(link.url.startsWith(`${platform.baseUrl}/connect/cl_`), link.url);
  assert.ok(!Number.isNaN(Date.parse(link.expires_at)));

  // The link works once.
  const again = await fetch(link.url, { redirect: "manual" });
  assert.ok(again.status >= 400 && again.status < 500, String(again.status));

  const page = await client.connections({ app: "slack" });
  const conn = page.connections.find((c) => c.id === connectionId);
  assert.ok(conn, JSON.stringify(page));
  assert.equal(conn.status, "active");
  assert.equal(conn.label, "work");
  const all = [];
  for await (const c of client.iterConnections({ limit: 1 })) all.push(c.id);
  assert.ok(all.includes(connectionId));
  assert.equal((await client.apps({ search: "slack" })).apps[0].connection_status, "connected");

  await client.deleteConnection(connectionId);
  const after = await client.connections({ app: "slack" });
  assert.ok(!after.connections.some((c) => c.id === connectionId && c.status === "active"));
});

test("connect to an unknown app is a 404 app_not_found", async () => {
  const err = await client.connect("no_such_app").catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 404);
  assert.equal(err.code, "app_not_found");
});

test("running a tool without a connection is a 409 with the connect URL", async () => {
  const fresh = new Client({ apiKey: await platform.account("noconn"), baseUrl: platform.baseUrl });
  const err = await fresh.runTool("slack_send_message", { body: { channel: "#general", text: "hi" } }).catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 409);
  assert.equal(err.code, "connection_required");
  assert.match(err.connectUrl, /\/connect\/cl_/);
  assert.equal(err.problem.app, "slack");
  const runs = await fresh.runs();
  assert.equal(runs.runs[0].status, "connection_required");
});

test("runTool calls the app's API with the connection's token and records the run", async () => {
  const own = new Client({ apiKey: await platform.account("run"), baseUrl: platform.baseUrl });
  const { connectionId } = await connectApp(own, "slack");
  const before = fakes.calls.length;
  const run = await own.runTool("slack_send_message", { body: { channel: "#general", text: "hi" } }, { connectionId });
  assert.match(run.run_id, /^run_/);
  assert.equal(run.status, "succeeded");
  assert.equal(run.tool, "slack_send_message");
  assert.equal(run.app, "slack");
  assert.equal(run.http_status, 200);
  assert.equal(run.connection_id, connectionId);
  assert.equal(run.data.path, "/api/slack_send_message");
  const call = fakes.calls[before];
  assert.equal(call.method, "POST");
  assert.match(call.headers.authorization, /^Bearer tok_\d+$/);
  assert.deepEqual(JSON.parse(call.body), { channel: "#general", text: "hi" });
  const { runs } = await own.runs();
  assert.equal(runs[0].id, run.run_id);
  assert.equal(runs[0].status, "succeeded");
});

test("invalid arguments are a 422 invalid_arguments with pointers; an unknown tool a 404", async () => {
  const err = await client.runTool("slack_send_message", { body: { channel: 5 } }).catch((e) => e);
  assert.equal(err.status, 422);
  assert.equal(err.code, "invalid_arguments");
  assert.ok(err.errors.length >= 1);
  const nf = await client.runTool("no_such_tool", {}).catch((e) => e);
  assert.equal(nf.code, "tool_not_found");
});

test("custom REST connector: create, list, get, refresh, run its tool against the API, delete", async () => {
  // From the document's URL, so refresh has something to fetch again.
  const cc = await client.createCustomConnector({ kind: "rest", name: "echo", url: `${fakes.url}/openapi.json`, base_url: fakes.url, headers: { "x-api-key": "sekret" } });
  assert.match(cc.id, /^cc_/);
  assert.equal(cc.kind, "rest");
  assert.equal(cc.tool_count, 1);
  const toolName = cc.tools[0].name;
  assert.match(toolName, /^custom\.echo\./);
  assert.equal((await client.getCustomConnector(cc.id)).id, cc.id);
  const listed = [];
  for await (const c of client.iterCustomConnectors()) listed.push(c.id);
  assert.ok(listed.includes(cc.id));
  assert.equal((await client.refreshCustomConnector(cc.id)).tool_count, 1);

  const tool = await client.getTool(toolName);
  assert.ok(tool.input_schema);
  const found = await client.findTools("echo a message", { limit: 5 });
  assert.ok(found.tools.some((x) => x.name === toolName), JSON.stringify(found));

  const before = fakes.calls.length;
  const run = await client.runTool(toolName, { body: { message: "hello" } });
  assert.match(run.run_id, /^run_/);
  assert.equal(run.status, "succeeded");
  assert.equal(run.http_status, 200);
  assert.equal(run.data.path, "/api/echo");
  const call = fakes.calls[before];
  assert.equal(call.method, "POST");
  assert.equal(call.headers["x-api-key"], "sekret");
  assert.deepEqual(JSON.parse(call.body), { message: "hello" });
  const runs = await client.runs();
  assert.equal(runs.runs[0].id, run.run_id);

  await client.deleteCustomConnector(cc.id);
  const gone = await client.getCustomConnector(cc.id).catch((e) => e);
  assert.equal(gone.status, 404);
});

test("a custom connector from an inline document is not refreshable (422)", async () => {
  const cc = await client.createCustomConnector({ kind: "rest", name: "inline", openapi: OPENAPI, base_url: fakes.url });
  assert.equal(cc.tool_count, 1);
  const err = await client.refreshCustomConnector(cc.id).catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 422);
  assert.equal(err.code, "not_refreshable");
  await client.deleteCustomConnector(cc.id);
});

test("a custom connector pointing at a refused destination is a 422", async () => {
  const err = await client.createCustomConnector({ kind: "mcp", url: "http://169.254.169.254/mcp" }).catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 422);
  assert.equal(err.code, "destination_refused");
});

test("triggers: events, create (secret once), a real signed delivery verified, get, list, delete", async () => {
  const { events } = await client.triggerEvents({ app: "slack" });
  // A poll event: the platform runs the app's list tool (against the fake) and fires on new items.
  const event = events.find((e) => e.kind === "poll");
  assert.ok(event, JSON.stringify(events));
  for (const k of ["name", "app", "kind", "description"]) assert.ok(k in event, k);
  const { connectionId } = await connectApp(client, event.app);
  const trg = await client.createTrigger({ app: event.app, event: event.name, webhookUrl: `${fakes.url}/hook`, connectionId });
  assert.match(trg.id, /^trg_/);
  assert.match(trg.secret, /^whsec_/);
  assert.equal(trg.status, "active");
  const got = await client.getTrigger(trg.id);
  assert.equal(got.secret, undefined, "the secret is shown only at creation");
  const listed = [];
  for await (const x of client.iterTriggers()) listed.push(x.id);
  assert.ok(listed.includes(trg.id));

  // The jobs function polls the app (the fake answers with new items each time) and delivers to
  // the receiver. The first poll records a baseline; the next is due a poll interval (60 s)
  // later, so rounds run until a delivery arrives or the deadline passes.
  const deadline = Date.now() + 150_000;
  while (fakes.deliveries.length === 0) {
    assert.ok(Date.now() < deadline, `no delivery within 150 s; health: ${JSON.stringify((await client.getTrigger(trg.id)).health)}`);
    await platform.jobsOnce();
    if (fakes.deliveries.length === 0) await new Promise((r) => setTimeout(r, 2_000));
  }
  const d = fakes.deliveries[0];
  const payload = await verifyWebhook({ secret: trg.secret, headers: d.headers, body: d.body });
  assert.equal(payload.type, "trigger.event");
  assert.equal(payload.data.trigger_id, trg.id);
  await assert.rejects(verifyWebhook({ secret: trg.secret, headers: d.headers, body: d.body.replace("trigger", "tr1gger") }));

  await client.deleteTrigger(trg.id);
  const gone = await client.getTrigger(trg.id).catch((e) => e);
  assert.equal(gone.status, 404);
});

test("account events list", async () => {
  const out = await client.events({ limit: 10 });
  assert.ok(Array.isArray(out.events));
  for (const e of out.events) {
    assert.match(e.id, /^evt_/);
    assert.ok(e.type && e.created_at);
  }
});

test("examples/quickstart.mjs finds a tool, connects its app through the printed link and runs it", async () => {
  const { spawn } = await import("node:child_process");
  const { once } = await import("node:events");
  const child = spawn(
    process.execPath,
    [new URL("../examples/quickstart.mjs", import.meta.url).pathname, "send a message to a slack channel", '{"body":{"channel":"#general","text":"hi"}}'],
    { env: { ...process.env, COMPANION_API_KEY: await platform.account("example"), COMPANION_BASE_URL: platform.baseUrl }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  let opened = false;
  child.stderr.on("data", (d) => (err += d));
  child.stdout.on("data", async (d) => {
    out += d;
    const m = out.match(/^connect: (\S+)$/m);
    if (m && !opened) {
      opened = true;
      // The user opens the link and presses the consent page's button; the fake provider
      // approves at once.
      const consent = await fetch(m[1]);
      assert.equal(consent.status, 200);
      await consent.text();
      const res = await fetch(m[1], { method: "POST", redirect: "follow" });
      assert.equal(res.status, 200);
      await res.text();
    }
  });
  const [code] = await once(child, "exit");
  assert.equal(code, 0, `${out}\n${err}`);
  assert.ok(opened, out);
  assert.match(out, /^found: slack_send_message /m);
  assert.match(out, /^connected slack$/m);
  assert.match(out, /^result: succeeded /m);
});
