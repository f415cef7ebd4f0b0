// The client against a real HTTP server on loopback: what goes on the wire and how problems
// come back.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, CompanionError } from "../src/index.js";

let server;
let baseUrl;
const seen = [];

before(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, headers: req.headers });
    if (req.url.startsWith("/api/v1/catalog")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ apps: [{ id: "slack", name: "Slack" }], next_cursor: null }));
      return;
    }
    res.writeHead(401, { "content-type": "application/problem+json" });
    res.end(JSON.stringify({ type: "about:blank", title: "Unauthorized", status: 401, code: "invalid_api_key", detail: "Unknown key.", request_id: "req_1" }));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});

after(() => new Promise((resolve) => server.close(resolve)));

test("catalog is fetched without sending the key", async () => {
  const client = new Client({ apiKey: "ck_secret", baseUrl });
  const page = await client.catalog({ category: "messaging" });
  assert.deepEqual(page.apps, [{ id: "slack", name: "Slack" }]);
  const req = seen.at(-1);
  assert.equal(req.url, "/api/v1/catalog?category=messaging");
  assert.equal(req.headers.authorization, undefined);
  assert.match(req.headers["user-agent"], /^companion-js\/1\.0\.0$/);
});

test("problem responses become CompanionError with their fields", async () => {
  const client = new Client({ apiKey: "ck_bad", baseUrl });
  await assert.rejects(client.request("GET", "/connections"), (err) => {
    assert.ok(err instanceof CompanionError);
    assert.equal(err.status, 401);
    assert.equal(err.code, "invalid_api_key");
    assert.equal(err.requestId, "req_1");
    return true;
  });
  assert.equal(seen.at(-1).headers.authorization, "Bearer ck_bad");
});
