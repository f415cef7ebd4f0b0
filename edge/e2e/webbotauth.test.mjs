// Web Bot Auth: requests signed by an independent signer (npm `web-bot-auth`) are verified;
// tampered ones are served as anonymous. The agent's key directory is passed inline as a data:
// URL, which needs no HTTPS server in the test; such a self-asserted key is verified but earns
// no rate-limit bucket of its own (only a cached HTTPS directory on the agent's origin does; the
// unit tests in src/webbotauth cover that path, security.test.mjs the attacks). The site's
// own signed key directory is verified with npm `http-message-sig`.
import { test } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync, webcrypto } from "node:crypto";
import { signatureHeaders } from "web-bot-auth";
import { signerFromJWK, verifier } from "web-bot-auth/crypto";
import { verify as verifyHttpSig } from "http-message-sig";
import { BASE_URL, uniqueClientIp } from "./helpers.mjs";

/** A fresh Ed25519 agent key, so each test is its own rate-limit client. */
function agentKey() {
  const { privateKey } = generateKeyPairSync("ed25519");
  return privateKey.export({ format: "jwk" });
}

function inlineDirectory(jwk) {
  const { d: _d, ...pub } = jwk;
  const body = Buffer.from(JSON.stringify({ keys: [pub] })).toString("base64");
  return `"data:application/http-message-signatures-directory;base64,${body}"`;
}

async function signedRequest(path, jwk, { ip = uniqueClientIp() } = {}) {
  const url = `${BASE_URL}${path}`;
  const signatureAgent = inlineDirectory(jwk);
  const request = new Request(url, { headers: { "signature-agent": signatureAgent } });
  const now = new Date();
  const headers = await signatureHeaders(request, await signerFromJWK(jwk), {
    created: now,
    expires: new Date(now.getTime() + 60_000),
  });
  return {
    url,
    headers: {
      "signature-agent": signatureAgent,
      signature: headers["Signature"],
      "signature-input": headers["Signature-Input"],
      "cf-connecting-ip": ip,
      "user-agent": "presence-e2e-agent/1.0 (+https://example.com/bot)",
    },
  };
}

test("a request signed with an inline key is verified but limited by its address", async () => {
  const jwk = agentKey();
  const ip = uniqueClientIp();
  const a = await signedRequest("/agent/search?q=pricing", jwk, { ip });
  const first = await fetch(a.url, { headers: a.headers });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("web-bot-auth"), "verified");
  // The same self-asserted key from another address is another client: the key proves nothing.
  const b = await signedRequest("/agent/search?q=pricing", jwk);
  const second = await fetch(b.url, { headers: b.headers });
  assert.equal(second.status, 200);
  assert.equal(second.headers.get("web-bot-auth"), "verified");
  // The first address was charged.
  const anon = await fetch(`${BASE_URL}/llms.txt`, { headers: { "cf-connecting-ip": ip } });
  assert.equal(anon.status, 429);
});

test("a tampered signature is served as anonymous, never refused", async () => {
  const jwk = agentKey();
  const ip = uniqueClientIp();
  const req = await signedRequest("/pricing", jwk, { ip });
  const sig = req.headers.signature;
  const flipped = sig.replace(/:(.)/, (_, c) => `:${c === "A" ? "B" : "A"}`);
  const res = await fetch(req.url, { headers: { ...req.headers, signature: flipped } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("web-bot-auth"), "invalid");
  // Anonymous means keyed by address: the same address is now limited.
  const again = await fetch(`${BASE_URL}/pricing`, { headers: { "cf-connecting-ip": ip } });
  assert.equal(again.status, 429);
});

test("a signature for another host does not verify", async () => {
  const jwk = agentKey();
  const req = await signedRequest("/pricing", jwk);
  // Re-sign the same headers for a different authority by changing the Host we send to.
  const url = new URL(req.url);
  url.hostname = url.hostname === "127.0.0.1" ? "localhost" : "127.0.0.1";
  const res = await fetch(url, { headers: req.headers });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("web-bot-auth"), "invalid");
});

test("unsigned requests are labelled unsigned", async () => {
  const res = await fetch(`${BASE_URL}/llms.txt`);
  assert.equal(res.headers.get("web-bot-auth"), "unsigned");
});

test("the site's own key directory is a signed JWKS without private parts", async () => {
  const url = `${BASE_URL}/.well-known/http-message-signatures-directory`;
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/http-message-signatures-directory+json");
  const text = await res.text();
  const jwks = JSON.parse(text);
  assert.equal(jwks.keys.length, 1);
  const key = jwks.keys[0];
  assert.equal(key.kty, "OKP");
  assert.equal(key.crv, "Ed25519");
  assert.equal(key.d, undefined);
  // kid is the RFC 7638 thumbprint.
  const canonical = JSON.stringify({ crv: key.crv, kty: key.kty, x: key.x });
  const thumb = Buffer.from(await webcrypto.subtle.digest("SHA-256", Buffer.from(canonical))).toString("base64url");
  assert.equal(key.kid, thumb);
  // Content-Digest covers the body.
  const digest = Buffer.from(await webcrypto.subtle.digest("SHA-256", Buffer.from(text))).toString("base64");
  assert.equal(res.headers.get("content-digest"), `sha-256=:${digest}:`);
  assert.match(res.headers.get("signature-input"), /tag="http-message-signatures-directory"/);
  // The signature verifies against the published key, over @authority;req and content-digest.
  const publicKey = await webcrypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: key.x }, { name: "Ed25519" }, false, ["verify"]);
  const headers = Object.fromEntries(res.headers.entries());
  const message = { request: { method: "GET", url, headers: {} }, response: { status: 200, headers } };
  await verifyHttpSig(message, verifier(publicKey));
  // ...and not against a tampered digest.
  const tampered = { ...message, response: { status: 200, headers: { ...headers, "content-digest": "sha-256=:AAAA:" } } };
  await assert.rejects(verifyHttpSig(tampered, verifier(publicKey)));
});
