// Zero-dependency client for the companion integration platform. Uses only `fetch`, so it runs on
// Node 18+, Deno, Bun, Workers and browsers.

export const VERSION = "1.0.0";
const DEFAULT_BASE_URL = "https://platform.example.com";

/** Error carrying the fields of an RFC 9457 problem response. */
export class CompanionError extends Error {
  constructor(status, problem = {}) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.name = "CompanionError";
    this.status = status;
    this.code = problem.code ?? null;
    this.detail = problem.detail ?? null;
    this.requestId = problem.request_id ?? null;
    this.retryAfter = problem.retry_after ?? null;
    this.connectUrl = problem.connect_url ?? null;
  }
}

function envVar(name) {
  // `process` does not exist in browsers and Workers; the key must then be passed explicitly.
  return typeof process !== "undefined" && process.env ? process.env[name] : undefined;
}

export class Client {
  constructor({ apiKey, baseUrl, fetch: fetchImpl } = {}) {
    this.apiKey = apiKey ?? envVar("COMPANION_API_KEY");
    this.baseUrl = (baseUrl ?? envVar("COMPANION_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.fetch = fetchImpl ?? globalThis.fetch.bind(globalThis);
  }

  /** The public app catalog (no key needed). */
  async catalog({ cursor, category } = {}) {
    const query = new URLSearchParams();
    if (cursor) query.set("cursor", cursor);
    if (category) query.set("category", category);
    const qs = query.toString();
    return this.request("GET", `/catalog${qs ? `?${qs}` : ""}`, undefined, { auth: false });
  }

  async request(method, path, body, { auth = true } = {}) {
    const headers = { accept: "application/json", "user-agent": `companion-js/${VERSION}` };
    if (auth) {
      if (!this.apiKey) throw new CompanionError(401, { code: "missing_api_key", detail: "No API key: pass apiKey or set COMPANION_API_KEY." });
      headers.authorization = `Bearer ${this.apiKey}`;
    }
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await this.fetch(`${this.baseUrl}/api/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        throw new CompanionError(res.status, { detail: `Response is not JSON: ${text.slice(0, 200)}` });
      }
    }
    if (!res.ok) throw new CompanionError(res.status, data ?? {});
    return data;
  }
}
