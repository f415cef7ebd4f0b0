#!/usr/bin/env node
// Quick start: find a tool for a task in plain words, connect its app (once), and run it.
//
//   export COMPANION_API_KEY=cpk_...            # your key
//   export COMPANION_BASE_URL=https://...       # optional: another platform (e.g. api --local)
//   node examples/quickstart.mjs "send a message to a slack channel" '{"body":{"channel":"#general","text":"Hello"}}'
//
// In your project, import from "@presence/companion" instead of the relative path.
import { Client, CompanionError } from "../src/index.js";

const task = process.argv[2] ?? "send a message to a slack channel";
const args = JSON.parse(process.argv[3] ?? '{"body":{"channel":"#general","text":"Hello from the companion SDK"}}');
const client = new Client();

// 1. Find a tool for the task.
const { tools, hint } = await client.findTools(task, { limit: 3 });
if (tools.length === 0) {
  console.log(`no tool for "${task}": ${hint}`);
  process.exit(1);
}
for (const t of tools) console.log(`found: ${t.name} (${t.app}, score ${t.score.toFixed(2)}): ${t.description}`);
const tool = await client.getTool(tools[0].name);
console.log(`input schema of ${tool.name}: ${JSON.stringify(tool.input_schema)}`);

// 2. Connect its app once: the user opens the link and approves; we wait for the connection.
async function activeConnection(app) {
  for await (const c of client.iterConnections({ app })) if (c.status === "active") return c;
  return null;
}
if (!(await activeConnection(tool.app))) {
  const link = await client.connect(tool.app);
  console.log(`connect: ${link.url}`);
  console.log(`open the link above to connect ${tool.app} (it works once, until ${link.expires_at}); waiting...`);
  const deadline = Date.now() + 10 * 60_000;
  while (!(await activeConnection(tool.app))) {
    if (Date.now() > deadline) throw new Error("not connected within 10 minutes");
    await new Promise((r) => setTimeout(r, 2_000));
  }
  console.log(`connected ${tool.app}`);
}

// 3. Run it.
try {
  const run = await client.runTool(tool.name, args);
  console.log(`result: ${run.status} (HTTP ${run.http_status}, ${run.duration_ms} ms, ${run.run_id})`);
  console.log(JSON.stringify(run.data, null, 2));
} catch (e) {
  if (!(e instanceof CompanionError)) throw e;
  console.error(`failed: ${e.status} ${e.code}: ${e.detail}${e.connectUrl ? ` (connect: ${e.connectUrl})` : ""}`);
  for (const fe of e.errors) console.error(`  ${fe.pointer}: ${fe.detail}`);
  process.exit(1);
}
