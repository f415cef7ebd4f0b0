// Every operation of the SDK against the real platform (`api --local` over DynamoDB Local, see
// platform.mjs), with the development fixture catalog so the expected apps and tools are known.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client, CompanionError } from "../src/index.js";
import { Platform } from "./platform.mjs";

const platform = new Platform();
let key;
let client;

before(async () => {
  await platform.start();
  key = await platform.account("sdk-js");
  client = new Client({ apiKey: key, baseUrl: platform.baseUrl });
});

after(() => platform.stop());

/** A fetch that counts what goes over the wire, for retry tests. */
function countingFetch() {
  const calls = [];
  const f = async (url, init) => {
    calls.push({ url, method: init.method });
    return fetch(url, init);
  };
  f.calls = calls;
  return f;
}

test("health answers ok with the server version, without a key", async () => {
  const anon = new Client({ apiKey: "", baseUrl: platform.baseUrl });
  const h = await anon.health();
  assert.equal(h.status, "ok");
  assert.match(h.version, /^\d+\.\d+\.\d+/);
});

test("catalog pages with next_cursor and filters by category", async () => {
  const first = await client.catalog({ limit: 2 });
  assert.deepEqual(first.apps.map((a) => a.id), ["github", "gmail"]);
  assert.equal(typeof first.next_cursor, "string");
  const second = await client.catalog({ limit: 2, cursor: first.next_cursor });
  assert.deepEqual(second.apps.map((a) => a.id), ["google_sheets", "slack"]);
  const comms = await client.catalog({ category: "communication" });
  assert.deepEqual(comms.apps.map((a) => a.id), ["gmail", "slack", "zoom"]);
  assert.equal(comms.next_cursor, null);
  for (const a of comms.apps) assert.ok(a.tool_count >= 1 && a.categories.includes("communication"));
});

test("iterCatalog walks every page: each app once, in order", async () => {
  const ids = [];
  for await (const app of client.iterCatalog({ limit: 2 })) ids.push(app.id);
  assert.deepEqual(ids, ["github", "gmail", "google_sheets", "slack", "stripe", "zoom"]);
});

test("apps search returns the account's connection status", async () => {
  const page = await client.apps({ search: "slack" });
  assert.equal(page.apps[0].id, "slack");
  assert.equal(page.apps[0].connection_status, "not_connected");
  const all = [];
  for await (const app of client.iterApps({ limit: 4 })) all.push(app.id);
  assert.equal(all.length, 6);
});

test("getApp answers one app with its connection status; an unknown one is a 404", async () => {
  const app = await client.getApp("slack");
  assert.equal(app.id, "slack");
  assert.equal(app.name, "Slack");
  assert.equal(app.tool_count, 2);
  assert.equal(app.connection_status, "not_connected");
  assert.ok(Array.isArray(app.former_ids) && Array.isArray(app.documents) && Array.isArray(app.auth));
  await assert.rejects(client.getApp("no such app"), (e) => {
    assert.ok(e instanceof CompanionError);
    assert.equal(e.status, 404);
    assert.equal(e.code, "app_not_found");
    return true;
  });
});

test("findTools finds the tool for a plain-language task", async () => {
  const found = await client.findTools("send a message to a slack channel");
  assert.equal(found.tools[0].name, "slack_send_message");
  assert.equal(found.tools[0].app, "slack");
  assert.equal(found.tools[0].connection_status, "not_connected");
  assert.ok(found.tools[0].matched_terms.length > 0);
  const onlyGithub = await client.findTools("create an issue", { app: "github", limit: 1 });
  assert.deepEqual(onlyGithub.tools.map((t) => t.name), ["github_create_issue"]);
});

test("getTool returns the input schema", async () => {
  const tool = await client.getTool("slack_send_message");
  assert.equal(tool.app, "slack");
  assert.deepEqual(tool.input_schema.required, ["channel", "text"]);
  // The development catalog gives no HTTP operation for it: the detail says so rather than guess.
  assert.equal(tool.method, null);
  assert.equal(tool.server_url, null);
  assert.deepEqual(tool.auth, []);
  assert.deepEqual(Object.keys(tool.example_input).sort(), ["channel", "text"]);
});

test("runs lists the account's runs (none yet for a new account)", async () => {
  const other = new Client({ apiKey: await platform.account("runs"), baseUrl: platform.baseUrl });
  assert.deepEqual(await other.runs(), { runs: [], next_cursor: null });
});

test("an unknown key is a 401 CompanionError with the problem fields, the key nowhere in it", async () => {
  const badKey = `cpk_${"A".repeat(43)}`;
  const bad = new Client({ apiKey: badKey, baseUrl: platform.baseUrl });
  const err = await bad.runs().catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 401);
  assert.equal(err.code, "unauthorized");
  assert.match(err.requestId, /^req_[0-9a-f]{16}$/);
  assert.ok(err.detail);
  assert.ok(!JSON.stringify({ ...err, message: err.message, stack: err.stack }).includes(badKey));
  assert.ok(!JSON.stringify(bad).includes(badKey));
});

test("no key at all fails before any request", async () => {
  const f = countingFetch();
  const none = new Client({ apiKey: "", baseUrl: platform.baseUrl, fetch: f });
  const err = await none.runs().catch((e) => e);
  assert.equal(err.code, "missing_api_key");
  assert.equal(f.calls.length, 0);
});

test("an unknown tool is a 404 tool_not_found", async () => {
  const err = await client.getTool("no_such_tool").catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 404);
  assert.equal(err.code, "tool_not_found");
});

test("invalid input comes back as 400/422 problems with field errors", async () => {
  const err = await client.findTools("", { limit: 99 }).catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 422);
  assert.ok(err.errors.length >= 1, JSON.stringify(err.problem));
  assert.ok(err.errors.some((e) => e.pointer.startsWith("/query") || e.pointer.startsWith("/limit")));
  const bad = await client.catalog({ limit: 0 }).catch((e) => e);
  assert.equal(bad.status, 400);
  assert.equal(bad.code, "invalid_parameter");
  const cursor = await client.catalog({ cursor: "not-a-cursor" }).catch((e) => e);
  assert.equal(cursor.code, "invalid_cursor");
});

test("rate limit: 429 is retried after Retry-After, then raised with retryAfter", async () => {
  const limitedKey = await platform.account("ratelimit");
  const plain = new Client({ apiKey: limitedKey, baseUrl: platform.baseUrl, maxRetries: 0 });
  // Start early in a one-minute window so the whole test stays inside it: the first request
  // says (RateLimit t=) how long the current window lasts; if not long enough, wait it out.
  const first = await fetch(`${platform.baseUrl}/api/v1/runs`, { headers: { authorization: `Bearer ${limitedKey}` } });
  const left = Number(/;t=(\d+)/.exec(first.headers.get("ratelimit") ?? "")?.[1]);
  assert.ok(left >= 1 && left <= 60, first.headers.get("ratelimit"));
  if (left < 20) await new Promise((r) => setTimeout(r, left * 1000 + 200));
  // Spend the key's budget of 120 requests in this window.
  let spent = 0;
  for (;;) {
    try {
      await plain.runs();
      spent++;
    } catch (e) {
      assert.equal(e.status, 429);
      break;
    }
    assert.ok(spent <= 120, "more than 120 requests passed in one window");
  }
  assert.ok(spent >= 100, `only ${spent} requests before the 429`);

  const waits = [];
  const f = countingFetch();
  const retrying = new Client({
    apiKey: limitedKey,
    baseUrl: platform.baseUrl,
    fetch: f,
    maxRetries: 2,
    sleep: async (ms) => {
      waits.push(ms);
    },
  });
  const err = await retrying.runs().catch((e) => e);
  assert.ok(err instanceof CompanionError);
  assert.equal(err.status, 429);
  assert.equal(err.code, "rate_limited");
  assert.ok(err.retryAfter >= 1 && err.retryAfter <= 60, String(err.retryAfter));
  assert.equal(f.calls.length, 3, "one request and two retries");
  assert.equal(waits.length, 2);
  for (const w of waits) assert.ok(w >= 1000 && w <= 60_000, `waited ${w} ms`);

  // A Retry-After longer than the caller allows: raised at once, no waiting.
  const f2 = countingFetch();
  const impatient = new Client({ apiKey: limitedKey, baseUrl: platform.baseUrl, fetch: f2, maxRetryDelayMs: 500, sleep: async () => assert.fail("must not wait") });
  const err2 = await impatient.runs().catch((e) => e);
  assert.equal(err2.status, 429);
  assert.equal(f2.calls.length, 1);

  // Other keys are unaffected.
  await client.findTools("list slack channels");
});
