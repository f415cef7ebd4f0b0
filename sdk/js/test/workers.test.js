// The SDK on the Workers runtime: `wrangler dev` serves test/workers/worker.js (which imports the
// SDK), pointed at the real platform; the worker calls it and verifies the webhook test vector.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Platform, ROOT, freePort } from "./platform.mjs";

const platform = new Platform();
const WRANGLER = `${ROOT}node_modules/.bin/wrangler`;
let wrangler;
let workerUrl;
let log = "";
let state;

before(async () => {
  assert.ok(existsSync(WRANGLER), `wrangler is missing at ${WRANGLER}: run npm ci in the repository root`);
  await platform.start();
  const port = await freePort();
  workerUrl = `http://127.0.0.1:${port}`;
  state = mkdtempSync(join(tmpdir(), "sdk-workers-"));
  wrangler = spawn(
    WRANGLER,
    ["dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(await freePort()),
      "--persist-to", state, "--show-interactive-dev-session=false", "--var", `PLATFORM_URL:${platform.baseUrl}`],
    {
      cwd: fileURLToPath(new URL("./workers/", import.meta.url)),
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
  wrangler.stdout.on("data", (d) => (log = (log + d).slice(-20_000)));
  wrangler.stderr.on("data", (d) => (log = (log + d).slice(-20_000)));
  // Poll until the worker answers (a condition with a deadline, not a fixed sleep).
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      await fetch(workerUrl, { signal: AbortSignal.timeout(5_000) });
      break;
    } catch {
      assert.ok(Date.now() < deadline, `wrangler dev did not come up:\n${log}`);
      assert.equal(wrangler.exitCode, null, `wrangler dev exited:\n${log}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
});

after(async () => {
  if (wrangler && wrangler.exitCode === null) {
    // wrangler starts workerd as a child: stop the whole group it leads.
    process.kill(-wrangler.pid, "SIGTERM");
    await once(wrangler, "exit");
  }
  if (state) rmSync(state, { recursive: true, force: true });
  await platform.stop();
});

test("the SDK runs on the Workers runtime: platform calls, paging and webhook verification", async () => {
  const res = await fetch(workerUrl);
  const out = await res.json();
  assert.equal(res.status, 200, JSON.stringify(out));
  assert.equal(out.version, "1.0.0");
  assert.equal(out.health.status, "ok");
  assert.deepEqual(out.catalog, ["github", "gmail"]);
  assert.equal(typeof out.nextCursor, "string");
  assert.deepEqual(out.allApps, ["github", "gmail", "google_sheets", "slack", "stripe", "zoom"]);
  assert.deepEqual(out.webhook, { test: 2432232314 });
  assert.equal(out.tamperedRefused, true);
  // No environment on Workers: without an explicit key, calls that need one fail locally.
  assert.equal(out.noKey, "missing_api_key");
});
