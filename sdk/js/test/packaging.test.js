// Packaging: `npm pack` builds the tarball users install; installed into a clean directory it
// imports under its package name, and its type declarations compile a typical consumer.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ROOT } from "./platform.mjs";

const exec = promisify(execFile);
const SDK = fileURLToPath(new URL("../", import.meta.url));
let dir;
let tarball;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "sdk-js-pack-"));
  const { stdout } = await exec("npm", ["pack", "--json", "--pack-destination", dir], { cwd: SDK });
  const [info] = JSON.parse(stdout);
  tarball = join(dir, info.filename);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  await exec("npm", ["install", "--no-audit", "--no-fund", "--offline", tarball], { cwd: dir });
});

after(() => rmSync(dir, { recursive: true, force: true }));

test("npm pack ships the sources, declarations, README and CHANGELOG only", async () => {
  const { stdout } = await exec("tar", ["-tzf", tarball]);
  const files = stdout.trim().split("\n").sort();
  assert.deepEqual(files, [
    "package/CHANGELOG.md",
    "package/LICENSE",
    "package/README.md",
    "package/package.json",
    "package/src/index.d.ts",
    "package/src/index.js",
  ]);
});

test("the installed package imports by name in a clean directory", async () => {
  writeFileSync(
    join(dir, "check.mjs"),
    `import { Client, CompanionError, verifyWebhook, VERSION } from "@presence/companion";
     const c = new Client({ apiKey: "k", baseUrl: "http://127.0.0.1:1" });
     console.log(JSON.stringify({ VERSION, client: typeof c.findTools, err: typeof CompanionError, verify: typeof verifyWebhook }));`,
  );
  const { stdout } = await exec(process.execPath, ["check.mjs"], { cwd: dir });
  assert.deepEqual(JSON.parse(stdout), { VERSION: "1.0.0", client: "function", err: "function", verify: "function" });
});

test("the type declarations compile a typical consumer (tsc --noEmit, strict)", async () => {
  const tsc = `${ROOT}node_modules/typescript/bin/tsc`;
  assert.ok(existsSync(tsc), "typescript is missing: run npm ci in the repository root");
  copyFileSync(join(SDK, "test/types/consumer.ts"), join(dir, "consumer.ts"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "DOM", "DOM.AsyncIterable"], types: [] },
      files: ["consumer.ts"],
    }),
  );
  try {
    await exec(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: dir });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout}\n${e.stderr}`);
  }
});
