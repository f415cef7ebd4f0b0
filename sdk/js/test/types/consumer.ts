// Compiled with `tsc --noEmit` against the packed and installed package by packaging.test.js:
// the declarations must describe how the SDK is used.
import { Client, CompanionError, verifyWebhook, VERSION, type FindToolsResult, type TriggerDelivery } from "@presence/companion";

async function main(): Promise<void> {
  const client = new Client({ apiKey: "cpk_x", baseUrl: "http://127.0.0.1:1", maxRetries: 2, timeoutMs: 1000 });
  const page = await client.catalog({ category: "communication", limit: 10 });
  const first: string | undefined = page.apps[0]?.id;
  for await (const app of client.iterCatalog()) {
    const n: number = app.tool_count;
    void n;
  }
  const product = await client.getApp("twilio_api_v2010");
  const docs: string[] = product.documents.map((d) => d.id);
  const logo: string | null = product.logo_url;
  void docs;
  void logo;
  const found: FindToolsResult = await client.findTools("send a slack message", { app: "slack", limit: 3 });
  const tool = await client.getTool(found.tools[0].name);
  const method: string | null = tool.method;
  const kinds: string[] = tool.auth.map((a) => a.kind);
  const example: Record<string, unknown> | null = tool.example_input;
  void [method, kinds, example, tool.path, tool.server_url];
  const link = await client.connect(tool.app, { label: "work", redirectUrl: "https://example.com/done" });
  const url: string = link.url;
  try {
    const run = await client.runTool(tool.name, { channel: "#general", text: "hi" }, { connectionId: "conn_1" });
    const status: "succeeded" = run.status;
    void status;
  } catch (e) {
    if (e instanceof CompanionError && e.code === "connection_required") {
      const connect: string | null = e.connectUrl;
      void connect;
    }
  }
  const conns = await client.connections({ app: "slack" });
  await client.deleteConnection(conns.connections[0].id);
  const trg = await client.createTrigger({ app: "github", event: "issue.created", webhookUrl: "https://example.com/hook" });
  const secret: string = trg.secret;
  const cc = await client.createCustomConnector({ kind: "mcp", url: "https://mcp.example.com/mcp" });
  await client.refreshCustomConnector(cc.id);
  const events = await client.events({ limit: 5 });
  const delivery = await verifyWebhook<TriggerDelivery>({ secret, headers: new Headers(), body: "{}" });
  const triggerId: string = delivery.data.trigger_id;
  console.log(VERSION, first, url, events.events.length, triggerId, (await client.runs()).runs.length);
}

void main;
