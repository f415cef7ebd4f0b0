// Runs the SDK inside the Workers runtime: health and a catalog page from the platform named by
// the PLATFORM_URL variable, and the Standard Webhooks test vector through WebCrypto.
import { Client, CompanionError, verifyWebhook, VERSION } from "../../src/index.js";

const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  headers: new Headers({
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  }),
  body: '{"test": 2432232314}',
  now: 1614265330 * 1000,
};

export default {
  async fetch(request, env) {
    const out = { version: VERSION, hasProcess: typeof process !== "undefined" };
    try {
      const client = new Client({ baseUrl: env.PLATFORM_URL, apiKey: env.API_KEY || undefined });
      out.health = await client.health();
      const page = await client.catalog({ limit: 2 });
      out.catalog = page.apps.map((a) => a.id);
      out.nextCursor = page.next_cursor;
      const ids = [];
      for await (const app of client.iterCatalog({ limit: 4 })) ids.push(app.id);
      out.allApps = ids;
      out.webhook = await verifyWebhook(VECTOR);
      try {
        await verifyWebhook({ ...VECTOR, body: '{"test": 1}' });
        out.tamperedRefused = false;
      } catch {
        out.tamperedRefused = true;
      }
      try {
        await client.getTool("slack_send_message");
        out.noKey = "no error";
      } catch (e) {
        out.noKey = e instanceof CompanionError ? e.code : String(e);
      }
      return Response.json(out);
    } catch (e) {
      return Response.json({ ...out, error: String(e?.stack ?? e) }, { status: 500 });
    }
  },
};
