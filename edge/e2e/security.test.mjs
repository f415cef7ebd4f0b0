// Attacks on the rate limiter and the key-directory fetch, against the real Worker under
// `wrangler dev`. Signatures come from an independent signer (npm `web-bot-auth`).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { signatureHeaders } from "web-bot-auth";
import { signerFromJWK } from "web-bot-auth/crypto";
import { BASE_URL, uniqueClientIp, assertProblem } from "./helpers.mjs";

const EDGE = join(dirname(fileURLToPath(import.meta.url)), "..");

function agentKey() {
  const { privateKey } = generateKeyPairSync("ed25519");
  return privateKey.export({ format: "jwk" });
}

function inlineDirectory(keys) {
  const body = Buffer.from(JSON.stringify({ keys })).toString("base64");
  return `"data:application/http-message-signatures-directory;base64,${body}"`;
}

function publicPart(jwk) {
  const { d: _d, ...pub } = jwk;
  return pub;
}

/** Headers of a request signed with `jwk` (its thumbprint as keyid unless `keyid` is given). */
async function signed(path, jwk, { agent, keyid, ip = uniqueClientIp(), base = BASE_URL } = {}) {
  const url = `${base}${path}`;
  const signatureAgent = agent ?? inlineDirectory([publicPart(jwk)]);
  const request = new Request(url, { headers: { "signature-agent": signatureAgent } });
  const signer = await signerFromJWK(jwk);
  if (keyid) signer.keyid = keyid;
  const now = new Date();
  const h = await signatureHeaders(request, signer, {
    created: now,
    expires: new Date(now.getTime() + 60_000),
  });
  return {
    url,
    headers: {
      "signature-agent": signatureAgent,
      signature: h["Signature"],
      "signature-input": h["Signature-Input"],
      "cf-connecting-ip": ip,
    },
    keyid: signer.keyid,
  };
}

test("a fresh inline key per request does not buy a fresh rate-limit bucket", async () => {
  const ip = uniqueClientIp();
  const statuses = [];
  for (let i = 0; i < 3; i++) {
    const r = await signed("/llms.txt", agentKey(), { ip });
    const res = await fetch(r.url, { headers: r.headers });
    assert.equal(res.headers.get("web-bot-auth"), "verified");
    statuses.push(res.status);
  }
  assert.deepEqual(statuses, [200, 429, 429], "self-minted keys each got their own bucket");
});

test("a key that names another agent's keyid cannot spend that agent's budget", async () => {
  const victim = agentKey();
  const v = await signed("/llms.txt", victim);
  assert.equal((await fetch(v.url, { headers: v.headers })).status, 200);
  // The attacker's directory lists the attacker's own key under the victim's thumbprint.
  const attacker = agentKey();
  const forged = { ...publicPart(attacker), kid: v.keyid };
  const a = await signed("/llms.txt", attacker, {
    keyid: v.keyid,
    agent: inlineDirectory([forged]),
  });
  const res = await fetch(a.url, { headers: a.headers });
  assert.equal(res.status, 200, "the attacker was limited as the victim: it spent the victim's bucket");
  assert.notEqual(res.headers.get("web-bot-auth"), "verified", "a kid that is not the key's thumbprint verified");
});

test("IPv6 clients in one /64 share a bucket", async () => {
  const prefix = `2001:db8:${randomBytes(2).toString("hex")}:${randomBytes(2).toString("hex")}`;
  const first = await fetch(`${BASE_URL}/llms.txt`, { headers: { "cf-connecting-ip": `${prefix}::1` } });
  assert.equal(first.status, 200);
  const sibling = await fetch(`${BASE_URL}/llms.txt`, {
    headers: { "cf-connecting-ip": `${prefix}:0:abcd:ef01:2345` },
  });
  await assertProblem(sibling, 429);
  // Another /64 is another client.
  const other = await fetch(`${BASE_URL}/llms.txt`, { headers: { "cf-connecting-ip": uniqueClientIp() } });
  assert.equal(other.status, 200);
});

test("a bad signature, or a body too large, is limited like an anonymous request", async () => {
  const ip = uniqueClientIp();
  const garbage = {
    "cf-connecting-ip": ip,
    "signature-input": 'sig1=("@authority");created=1;keyid="x";tag="web-bot-auth"',
    signature: "sig1=:AAAA:",
    "signature-agent": '"https://127.0.0.1"',
  };
  const first = await fetch(`${BASE_URL}/llms.txt`, { headers: garbage });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("web-bot-auth"), "invalid");
  await assertProblem(await fetch(`${BASE_URL}/llms.txt`, { headers: garbage }), 429);

  const big = uniqueClientIp();
  // A path that answers in problem+json: on /mcp and the checkout routes the same refusals
  // come in the protocol's own shape (mcp.test.mjs and commerce.test.mjs check those).
  const post = () =>
    fetch(`${BASE_URL}/llms.txt`, {
      method: "POST",
      headers: { "cf-connecting-ip": big, "content-type": "application/json" },
      body: "x".repeat(300 * 1024),
    });
  await assertProblem(await post(), 413);
  await assertProblem(await post(), 429);
});

test("key directories on loopback are never fetched, however the address is spelled", async () => {
  const connections = [];
  const server = createServer((socket) => {
    connections.push(socket.remoteAddress);
    socket.destroy();
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = server.address().port;
  try {
    const spellings = ["127.1", "0177.0.0.1", "2130706433", "0x7f.0.0.1", "127.0.1", "0x7f000001", "017700000001"];
    for (const host of spellings) {
      const r = await signed("/llms.txt", agentKey(), { agent: `"https://${host}:${port}"` });
      const res = await fetch(r.url, { headers: r.headers });
      assert.equal(res.status, 200, host);
      assert.equal(res.headers.get("web-bot-auth"), "invalid", host);
    }
    // The Worker awaits the directory fetch before it answers: any attempt has connected by now.
    assert.deepEqual(connections, [], "the Worker connected to a loopback key directory");
  } finally {
    server.close();
  }
});

/** A second wrangler dev whose configuration lacks the limiter's Durable Object binding, so
 * every call to the limiter fails. */
async function wranglerWithoutLimiter() {
  const dir = mkdtempSync(join(tmpdir(), "edge-no-limiter-"));
  const toml = readFileSync(join(EDGE, "wrangler.toml"), "utf8")
    .split("\n[env.production]")[0]
    .replace(/\[\[durable_objects\.bindings\]\]\nname = "CLIENT_LIMITER"\nclass_name = "ClientLimiter"\n/, "")
    .replace('main = "build/index.js"', `main = "${join(EDGE, "build/index.js")}"`);
  assert.ok(!toml.includes('name = "CLIENT_LIMITER"'), "the limiter binding is still configured");
  writeFileSync(join(dir, "wrangler.toml"), toml);
  const port = await new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const inspector = await new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
  const wrangler = join(EDGE, "..", "node_modules", ".bin", "wrangler");
  const child = spawn(
    wrangler,
    ["dev", "--config", join(dir, "wrangler.toml"), "--ip", "127.0.0.1", "--port", String(port),
      "--inspector-port", String(inspector), "--persist-to", join(dir, "state"),
      "--show-interactive-dev-session=false", "--var", "STRIPE_SECRET_KEY:sk_test_none"],
    { cwd: dir, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  );
  let log = "";
  child.stdout.on("data", (d) => (log += d));
  child.stderr.on("data", (d) => (log += d));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      await fetch(`${base}/health`);
      break;
    } catch {
      if (Date.now() > deadline || child.exitCode !== null) {
        throw new Error(`wrangler did not come up:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return {
    base,
    log: () => log,
    // workerd's console lines reach wrangler's output after the response does, so a check for a
    // logged line waits for it to arrive (on the output's own data events), up to `ms`.
    logged: (re, ms = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!re.test(log)) return false;
          clearTimeout(timer);
          child.stdout.off("data", check);
          child.stderr.off("data", check);
          resolve(log);
          return true;
        };
        const timer = setTimeout(() => {
          child.stdout.off("data", check);
          child.stderr.off("data", check);
          reject(new Error(`no line matching ${re} within ${ms} ms:\n${log}`));
        }, ms);
        if (check()) return;
        child.stdout.on("data", check);
        child.stderr.on("data", check);
      }),
    stop: () => {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test("when the limiter fails, requests are refused with 429 and Retry-After, and it is logged", async () => {
  const w = await wranglerWithoutLimiter();
  try {
    const ip = uniqueClientIp();
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${w.base}/llms.txt`, { headers: { "cf-connecting-ip": ip } });
      const body = await assertProblem(res, 429);
      assert.match(body.detail, /one request per second/);
      assert.ok(Number(res.headers.get("retry-after")) >= 1, "Retry-After");
    }
    assert.match(await w.logged(/rate limiter unavailable/), /rate limiter unavailable/);
  } finally {
    w.stop();
  }
});
