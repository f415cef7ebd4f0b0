// End-to-end tests of the built worker under `wrangler dev` (workerd). BASE_URL is set by the
// test command; a missing BASE_URL is a failure, never a skip.
import { test } from "node:test";
import assert from "node:assert/strict";

const BASE_URL = process.env.BASE_URL;
assert.ok(BASE_URL, "BASE_URL must point at `wrangler dev` (the test command starts it)");

test("home page is served as Markdown", async () => {
  const res = await fetch(`${BASE_URL}/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /^text\/markdown/);
  assert.match(await res.text(), /^# Presence sensing/);
});

test("unknown paths answer an RFC 9457 problem", async () => {
  const res = await fetch(`${BASE_URL}/no-such-page`);
  assert.equal(res.status, 404);
  assert.equal(res.headers.get("content-type"), "application/problem+json");
  const body = await res.json();
  assert.equal(body.status, 404);
  assert.equal(body.title, "Not Found");
});
