// Test peer for the connect and tool-run tests: a real OAuth 2.0 authorization server
// (npm oauth2-mock-server: authorization code, PKCE S256 checked, refresh tokens, ID tokens) and a
// small "app API" that echoes what it received, on one loopback port.
//
// Prints one JSON line {"url": "http://127.0.0.1:PORT"} once listening, then serves until killed.
//
// Control (tests only), under /__control:
//   GET  /__control/stats             → token calls by grant type, the client authentication
//                                       used, and the refresh tokens presented
//   POST /__control/mode?k=v          → invalid_grant=1 (refresh answers 400 invalid_grant),
//                                       deny=1 (authorize redirects back with access_denied),
//                                       token_delay_ms=N (token answers wait N ms, so concurrent
//                                       refreshes overlap), fail_refresh=N (next N refreshes 503)
// App API, under /api: any path echoes {method, path, query, authorization, x_api_key, cookie,
// content_type, body}; /api/ratelimited answers 429 with Retry-After: 7; /api/redirect?to=URL
// answers 302 to URL.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { OAuth2Issuer, OAuth2Service } from "oauth2-mock-server";

const issuer = new OAuth2Issuer();
await issuer.keys.generate("RS256");
const service = new OAuth2Service(issuer);

const stats = { authorization_code: 0, refresh_token: 0, other: 0, client_auth: [], refresh_tokens: [] };
const mode = { invalid_grant: false, deny: false, token_delay_ms: 0, fail_refresh: 0 };

// Every token unique, even two issued in the same second for the same user.
service.on("beforeTokenSigning", (token) => {
  token.payload.jti = randomUUID();
});

service.on("beforeAuthorizeRedirect", (redirect) => {
  if (mode.deny) {
    redirect.url.searchParams.delete("code");
    redirect.url.searchParams.set("error", "access_denied");
  }
});

service.on("beforeResponse", (resp, req) => {
  const grant = req.body.grant_type;
  if (grant === "authorization_code" || grant === "refresh_token") stats[grant] += 1;
  else stats.other += 1;
  stats.client_auth.push(req.headers.authorization?.startsWith("Basic ") ? "basic" : req.body.client_secret ? "post" : "none");
  if (grant === "refresh_token") {
    stats.refresh_tokens.push(req.body.refresh_token);
    if (mode.fail_refresh > 0) {
      mode.fail_refresh -= 1;
      resp.statusCode = 503;
      resp.body = { error: "temporarily_unavailable" };
    } else if (mode.invalid_grant) {
      resp.statusCode = 400;
      resp.body = { error: "invalid_grant", error_description: "refresh token revoked" };
    }
  }
});

const oauth = service.requestHandler;

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://peer");
  const json = (status, body, headers = {}) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };
  if (url.pathname === "/__control/stats") return json(200, stats);
  if (url.pathname === "/__control/mode" && req.method === "POST") {
    for (const [k, v] of url.searchParams) {
      if (k === "invalid_grant" || k === "deny") mode[k] = v === "1";
      else if (k === "token_delay_ms" || k === "fail_refresh") mode[k] = Number(v);
    }
    return json(200, mode);
  }
  if (url.pathname.startsWith("/api/ratelimited")) return json(429, { error: "slow down" }, { "retry-after": "7" });
  if (url.pathname === "/api/redirect") {
    res.writeHead(302, { location: url.searchParams.get("to") ?? "/" });
    return res.end();
  }
  if (url.pathname.startsWith("/api/")) {
    const body = await readBody(req);
    return json(200, {
      method: req.method,
      path: url.pathname,
      query: url.search.slice(1),
      authorization: req.headers.authorization ?? null,
      x_api_key: req.headers["x-api-key"] ?? null,
      cookie: req.headers.cookie ?? null,
      content_type: req.headers["content-type"] ?? null,
      body,
    });
  }
  if (url.pathname === "/token" && mode.token_delay_ms > 0) {
    await new Promise((r) => setTimeout(r, mode.token_delay_ms));
  }
  return oauth(req, res);
});

server.listen(0, "127.0.0.1", () => {
  const base = `http://127.0.0.1:${server.address().port}`;
  issuer.url = base;
  console.log(JSON.stringify({ url: base }));
});

const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
