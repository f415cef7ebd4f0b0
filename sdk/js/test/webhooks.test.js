// Webhook verification: the Standard Webhooks test vector, and everything that must be refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { verifyWebhook, WebhookVerificationError } from "../src/index.js";

// From the Standard Webhooks specification's reference libraries.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TS = "1614265330";
const BODY = '{"test": 2432232314}';
const SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const NOW = Number(TS) * 1000;

const headers = (over = {}) => ({ "webhook-id": ID, "webhook-timestamp": TS, "webhook-signature": SIG, ...over });

function sign(secret, id, ts, body) {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${ts}.${body}`).digest("base64")}`;
}

const refused = (opts, message) =>
  assert.rejects(verifyWebhook(opts), (e) => {
    assert.ok(e instanceof WebhookVerificationError, String(e));
    if (message) assert.match(e.message, message);
    return true;
  });

test("the Standard Webhooks test vector verifies and the payload comes back parsed", async () => {
  assert.deepEqual(await verifyWebhook({ secret: SECRET, headers: headers(), body: BODY, now: NOW }), { test: 2432232314 });
  // Fetch Headers (case-insensitive), bytes and a clock function work the same.
  const h = new Headers({ "Webhook-Id": ID, "Webhook-Timestamp": TS, "Webhook-Signature": SIG });
  assert.deepEqual(await verifyWebhook({ secret: SECRET, headers: h, body: new TextEncoder().encode(BODY), now: () => NOW }), { test: 2432232314 });
});

test("a wrong signature, secret, id or body is refused", async () => {
  await refused({ secret: SECRET, headers: headers({ "webhook-signature": "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=" }), body: BODY, now: NOW }, /No matching signature/);
  await refused({ secret: "whsec_" + Buffer.from("another secret").toString("base64"), headers: headers(), body: BODY, now: NOW });
  await refused({ secret: SECRET, headers: headers({ "webhook-id": "msg_other" }), body: BODY, now: NOW });
  await refused({ secret: SECRET, headers: headers(), body: '{"test": 2432232315}', now: NOW });
  await refused({ secret: SECRET, headers: headers({ "webhook-signature": "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" }), body: BODY, now: NOW });
  await refused({ secret: SECRET, headers: headers({ "webhook-signature": "v1,not base64!" }), body: BODY, now: NOW });
});

test("missing headers are refused", async () => {
  for (const name of ["webhook-id", "webhook-timestamp", "webhook-signature"]) {
    const h = headers();
    delete h[name];
    await refused({ secret: SECRET, headers: h, body: BODY, now: NOW }, /Missing/);
  }
});

test("timestamps outside the 5-minute tolerance are refused, inside it accepted", async () => {
  await refused({ secret: SECRET, headers: headers(), body: BODY, now: NOW + 301_000 }, /too old/);
  await refused({ secret: SECRET, headers: headers(), body: BODY, now: NOW - 301_000 }, /too new/);
  assert.ok(await verifyWebhook({ secret: SECRET, headers: headers(), body: BODY, now: NOW + 299_000 }));
  assert.ok(await verifyWebhook({ secret: SECRET, headers: headers(), body: BODY, now: NOW - 299_000 }));
  await refused({ secret: SECRET, headers: headers(), body: BODY, now: NOW + 61_000, toleranceSeconds: 60 }, /too old/);
  await refused({ secret: SECRET, headers: headers({ "webhook-timestamp": "16142653x0" }), body: BODY, now: NOW });
  // The real clock by default: the vector is from 2021.
  await refused({ secret: SECRET, headers: headers(), body: BODY }, /too old/);
});

test("several signatures (secret rotation): any valid v1 one is accepted", async () => {
  const old = "whsec_" + Buffer.from("the previous secret, 32 bytes..").toString("base64");
  const both = `${sign(old, ID, TS, BODY)} ${SIG}`;
  assert.deepEqual(await verifyWebhook({ secret: SECRET, headers: headers({ "webhook-signature": both }), body: BODY, now: NOW }), { test: 2432232314 });
  assert.deepEqual(await verifyWebhook({ secret: old, headers: headers({ "webhook-signature": both }), body: BODY, now: NOW }), { test: 2432232314 });
  const none = `${sign(old, ID, TS, BODY)} v1,${Buffer.alloc(32).toString("base64")}`;
  await refused({ secret: SECRET, headers: headers({ "webhook-signature": none }), body: BODY, now: NOW });
});

test("a body that verifies but is not JSON is refused", async () => {
  const body = "not json";
  await refused({ secret: SECRET, headers: headers({ "webhook-signature": sign(SECRET, ID, TS, body) }), body, now: NOW }, /not JSON/);
});

test("without a global crypto (Node 18) the verifier falls back to node:crypto's WebCrypto", async () => {
  const { execFile } = await import("node:child_process");
  const { promisify } = await import("node:util");
  const src = new URL("../src/index.js", import.meta.url).href;
  const script = `
    Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true });
    const { verifyWebhook } = await import(${JSON.stringify(src)});
    const out = await verifyWebhook({ secret: ${JSON.stringify(SECRET)}, headers: ${JSON.stringify(headers())}, body: ${JSON.stringify(BODY)}, now: ${NOW} });
    console.log(typeof globalThis.crypto, JSON.stringify(out));`;
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script]);
  assert.equal(stdout.trim(), 'undefined {"test":2432232314}');
});
