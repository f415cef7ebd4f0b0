// Third parties on loopback for the integration tests: an OAuth 2.0 provider that approves at
// once, the app's API (answers every call with what it received), an OpenAPI document for a
// custom REST connector, and a webhook receiver that keeps raw bodies for signature checks.
import { createServer } from "node:http";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export class Fakes {
  constructor() {
    this.calls = [];
    this.deliveries = [];
    this.tokens = 0;
    this.dirs = [];
  }

  async start() {
    this.server = createServer(async (req, res) => {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const raw = Buffer.concat(chunks);
      const url = new URL(req.url, this.url);
      const json = (status, body) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(body));
      };
      if (url.pathname === "/authorize") {
        const back = new URL(url.searchParams.get("redirect_uri"));
        back.searchParams.set("code", "code_from_fake");
        back.searchParams.set("state", url.searchParams.get("state") ?? "");
        res.writeHead(302, { location: back.toString() });
        res.end();
      } else if (url.pathname === "/token") {
        this.tokens++;
        json(200, { access_token: `tok_${this.tokens}`, token_type: "bearer", expires_in: 3600, refresh_token: "refresh_fake" });
      } else if (url.pathname === "/done") {
        json(200, Object.fromEntries(url.searchParams));
      } else if (url.pathname === "/hook") {
        this.deliveries.push({ headers: req.headers, body: raw.toString("utf8") });
        json(200, { received: true });
      } else if (url.pathname === "/openapi.json") {
        json(200, OPENAPI);
      } else {
        this.calls.push({ method: req.method, path: url.pathname, query: url.search, headers: req.headers, body: raw.toString("utf8") });
        json(200, { ok: true, method: req.method, path: url.pathname, items: [{ id: `item_${this.calls.length}`, title: "from the fake" }] });
      }
    });
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    this.url = `http://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  /** OAUTH_APPS for the given catalog apps, all served by this fake. */
  oauthAppsFile(apps) {
    const dir = mkdtempSync(join(tmpdir(), "sdk-oauth-"));
    this.dirs.push(dir);
    const path = join(dir, "oauth_apps.json");
    const conf = {};
    for (const app of apps) {
      conf[app] = {
        client_id: `client_${app}`,
        client_secret: `secret_${app}`,
        authorize_url: `${this.url}/authorize`,
        token_url: `${this.url}/token`,
        base_url: this.url,
        pkce: true,
      };
    }
    writeFileSync(path, JSON.stringify(conf));
    return path;
  }

  /**
   * The fixture catalog made runnable against this fake: each app gets `base_url` and an OAuth 2.0
   * scheme, each tool an operation (`method`, `path`) and an input schema in the catalog's
   * path/query/header/body groups.
   */
  runnableCatalogFile(fixturePath) {
    const catalog = JSON.parse(readFileSync(fixturePath, "utf8"));
    for (const app of catalog.apps) {
      app.base_url = this.url;
      app.security_schemes = {
        oauth: { type: "oauth2", flows: { authorizationCode: { authorizationUrl: `${this.url}/authorize`, tokenUrl: `${this.url}/token`, scopes: { write: "write" } } } },
      };
      app.security = [{ oauth: ["write"] }];
      for (const tool of app.tools) {
        // List tools read (GET): triggers poll them; the rest write.
        tool.method = /_list_/.test(tool.name) ? "GET" : "POST";
        tool.path = `/api/${tool.name}`;
        tool.input_schema =
          tool.method === "GET"
            ? { type: "object", properties: { query: tool.input_schema } }
            : { type: "object", required: ["body"], properties: { body: tool.input_schema } };
      }
    }
    const dir = mkdtempSync(join(tmpdir(), "sdk-catalog-"));
    this.dirs.push(dir);
    const path = join(dir, "catalog.json");
    writeFileSync(path, JSON.stringify(catalog));
    return path;
  }

  async stop() {
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true });
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}

/** A small REST API for a custom connector: one operation, echo. */
export const OPENAPI = {
  openapi: "3.0.3",
  info: { title: "Echo", version: "1.0.0" },
  paths: {
    "/api/echo": {
      post: {
        operationId: "echo",
        summary: "Echo a message back",
        requestBody: { content: { "application/json": { schema: { type: "object", required: ["message"], properties: { message: { type: "string" } } } } } },
        responses: { 200: { description: "The message." } },
      },
    },
  },
};
