export declare const VERSION: string;

/** A field-level problem of a 422 answer: where (JSON pointer) and what. */
export interface FieldError {
  pointer: string;
  detail: string;
}

/** An RFC 9457 problem document as the platform sends it. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  instance?: string;
  code?: string;
  request_id?: string;
  retry_after?: number;
  connect_url?: string;
  errors?: FieldError[];
  [extra: string]: unknown;
}

export declare class CompanionError extends Error {
  constructor(status: number, problem?: Problem);
  /** HTTP status; 0 for a local failure: timeout, network error, missing key. */
  status: number;
  code: string | null;
  detail: string | null;
  requestId: string | null;
  /** Seconds to wait before trying again (429, 503, upstream_rate_limited). */
  retryAfter: number | null;
  /** Where to send the user when a connection is missing or needs re-authorisation. */
  connectUrl: string | null;
  errors: FieldError[];
  problem: Problem;
}

export declare class WebhookVerificationError extends Error {
  constructor(message: string);
}

export interface ClientOptions {
  /** Defaults to `COMPANION_API_KEY` where an environment exists. */
  apiKey?: string;
  /** Defaults to `COMPANION_BASE_URL`, then the hosted platform. */
  baseUrl?: string;
  fetch?: typeof fetch;
  /** Per attempt; default 30000. */
  timeoutMs?: number;
  /** Retries on 429/503; default 3. 0 disables retrying. */
  maxRetries?: number;
  /** Longest single wait; a longer Retry-After raises at once. Default 60000. */
  maxRetryDelayMs?: number;
  /** First backoff step without Retry-After (doubled each time, jittered); default 500. */
  retryBaseDelayMs?: number;
  userAgent?: string;
  /** How to wait between retries (tests). */
  sleep?: (ms: number) => Promise<void>;
}

export type ConnectionStatus = "not_connected" | "connected";

export interface Health {
  status: "ok";
  version: string;
}

export interface AppSummary {
  id: string;
  name: string;
  description: string;
  categories: string[];
  tool_count: number;
}

export interface App extends AppSummary {
  connection_status: ConnectionStatus;
}

/** A source document of an app. */
export interface AppDocument {
  id: string;
  title: string;
  version: string;
  origin: string;
  license: string | null;
}

/** One app in full (`getApp`). */
export interface AppDetail extends App {
  aliases: string[];
  /** Ids earlier catalogs gave its documents; each still names this app. */
  former_ids: string[];
  logo_url: string | null;
  documents: AppDocument[];
  /** How it connects: `oauth2`, `api_key`, `bearer`, `basic`, `openid_connect`. */
  auth: string[];
}

export interface CatalogPage {
  apps: AppSummary[];
  next_cursor: string | null;
}

export interface AppsPage {
  apps: App[];
  next_cursor: string | null;
}

export interface ConnectLink {
  id: string;
  app: string;
  auth: "oauth2" | "api_key" | "basic";
  /** Send the user here once; it works one time and expires. */
  url: string;
  expires_at: string;
}

export interface Connection {
  id: string;
  app: string;
  label: string | null;
  identity: string | null;
  status: "active" | "needs_reauth" | "revoked";
  auth: string;
  is_default: boolean;
  created_at: string;
  expires_at: string | null;
}

export interface ConnectionsPage {
  connections: Connection[];
  next_cursor: string | null;
}

export interface ToolHit {
  name: string;
  app: string;
  description: string;
  score: number;
  matched_terms: string[];
  connection_status: ConnectionStatus;
}

export interface FindToolsResult {
  tools: ToolHit[];
  /** Explains an empty result. */
  hint: string | null;
}

/** One accepted way to authenticate a tool's runs: kinds and scopes only, never a secret. */
export interface ToolAuth {
  /** `oauth2`, `api_key`, `basic`, `bearer`, `openid_connect` (`none`: no credentials is accepted); kinds used together are joined with `+`. */
  kind: string;
  scopes: string[];
  /** Names of the schemes used together (the API document's `securitySchemes` keys). */
  schemes: string[];
}

/** A tool's detail: what a run will do, before it runs. */
export interface Tool {
  name: string;
  app: string;
  description: string;
  input_schema: Record<string, unknown>;
  /** HTTP method of a run, e.g. `POST`; `null` when the catalog does not say (an MCP custom tool). */
  method: string | null;
  /** Path template relative to `server_url`, e.g. `/repos/{owner}/{repo}/issues`. */
  path: string | null;
  /** Where a run goes; variables without a default stay `{name}` templates the connection fills in. */
  server_url: string | null;
  /** Accepted ways to authenticate (any one suffices); empty when none is needed or the catalog does not say. */
  auth: ToolAuth[];
  /** One input that satisfies `input_schema` (required fields only). */
  example_input: Record<string, unknown> | null;
  connection_status: ConnectionStatus;
}

export interface RunResult {
  run_id: string;
  tool: string;
  app: string;
  status: "succeeded";
  http_status: number;
  data: unknown;
  duration_ms: number;
  connection_id: string | null;
}

export interface Run {
  id: string;
  tool: string;
  app: string;
  status: "succeeded" | "failed" | "connection_required";
  duration_ms: number;
  started_at: string;
  error: string | null;
  arguments: unknown;
}

export interface RunList {
  runs: Run[];
  next_cursor: null;
}

export type CustomConnectorSpec =
  | { kind: "mcp"; url: string; name?: string; headers?: Record<string, string> }
  | {
      kind: "rest";
      openapi?: Record<string, unknown>;
      url?: string;
      name?: string;
      base_url?: string;
      headers?: Record<string, string>;
    };

export interface CustomConnector {
  id: string;
  name: string;
  kind: "mcp" | "rest";
  url: string | null;
  tool_count: number;
  tools: { name: string; description: string }[];
  created_at: string;
  refreshed_at: string;
}

export interface CustomConnectorsPage {
  custom_connectors: CustomConnector[];
  next_cursor: string | null;
}

export interface TriggerEvent {
  name: string;
  app: string;
  kind: "poll" | "webhook";
  description: string;
  tool: string | null;
}

export interface TriggerHealth {
  last_poll_at: string | null;
  last_event_at: string | null;
  last_error: string | null;
  consecutive_failures: number;
  state: string;
}

export interface Trigger {
  id: string;
  app: string;
  event: string;
  webhook_url: string;
  status: string;
  /** Only in the answer of createTrigger. */
  secret?: string;
  created_at: string;
  health: TriggerHealth;
  [extra: string]: unknown;
}

export interface TriggersPage {
  triggers: Trigger[];
  next_cursor: string | null;
}

export interface AccountEvent {
  id: string;
  type: string;
  created_at: string;
  data: unknown;
}

/** The body of a trigger delivery. */
export interface TriggerDelivery<Item = unknown> {
  type: "trigger.event" | string;
  timestamp: string;
  data: { trigger_id: string; app: string; event: string; item: Item; [extra: string]: unknown };
}

export declare class Client {
  constructor(options?: ClientOptions);
  readonly apiKey: string | undefined;
  baseUrl: string;
  timeoutMs: number;
  maxRetries: number;
  maxRetryDelayMs: number;
  userAgent: string;

  health(): Promise<Health>;
  catalog(options?: { category?: string; cursor?: string; limit?: number }): Promise<CatalogPage>;
  iterCatalog(options?: { category?: string; limit?: number }): AsyncGenerator<AppSummary, void, undefined>;
  apps(options?: { search?: string; cursor?: string; limit?: number }): Promise<AppsPage>;
  iterApps(options?: { search?: string; limit?: number }): AsyncGenerator<App, void, undefined>;
  /** One app by slug, alias, title or former per-document id; `id` is the canonical slug. */
  getApp(app: string): Promise<AppDetail>;

  connect(app: string, options?: { label?: string; redirectUrl?: string }): Promise<ConnectLink>;
  connections(options?: { app?: string; cursor?: string; limit?: number }): Promise<ConnectionsPage>;
  iterConnections(options?: { app?: string; limit?: number }): AsyncGenerator<Connection, void, undefined>;
  deleteConnection(id: string): Promise<void>;

  findTools(query: string, options?: { app?: string; limit?: number }): Promise<FindToolsResult>;
  /** A tool's detail (method, path, server, auth kinds and scopes, input schema, example input); a name an earlier catalog issued answers with the tool under its current name. */
  getTool(name: string): Promise<Tool>;
  runTool(name: string, args?: Record<string, unknown>, options?: { connectionId?: string }): Promise<RunResult>;
  runs(): Promise<RunList>;

  createCustomConnector(spec: CustomConnectorSpec): Promise<CustomConnector>;
  customConnectors(options?: { cursor?: string; limit?: number }): Promise<CustomConnectorsPage>;
  iterCustomConnectors(options?: { limit?: number }): AsyncGenerator<CustomConnector, void, undefined>;
  getCustomConnector(id: string): Promise<CustomConnector>;
  /** Reloads the tool list from the connector's URL; one created from an inline document is a 422 not_refreshable. */
  refreshCustomConnector(id: string): Promise<CustomConnector>;
  deleteCustomConnector(id: string): Promise<void>;

  /** The events triggers can listen for in one app (the platform requires the app). */
  triggerEvents(options: { app: string }): Promise<{ events: TriggerEvent[] }>;
  createTrigger(options: {
    app: string;
    event: string;
    webhookUrl: string;
    connectionId?: string;
    filter?: Record<string, unknown>;
    params?: Record<string, unknown>;
  }): Promise<Trigger & { secret: string }>;
  triggers(options?: { cursor?: string; limit?: number }): Promise<TriggersPage>;
  iterTriggers(options?: { limit?: number }): AsyncGenerator<Trigger, void, undefined>;
  getTrigger(id: string): Promise<Trigger>;
  deleteTrigger(id: string): Promise<void>;
  enableTrigger(id: string): Promise<Trigger>;

  events(options?: { limit?: number }): Promise<{ events: AccountEvent[] }>;

  request<T = unknown>(method: string, path: string, body?: unknown, options?: { auth?: boolean }): Promise<T>;
}

export interface VerifyWebhookOptions {
  /** The trigger's `whsec_…` secret. */
  secret: string;
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The raw body exactly as received (not re-serialised JSON). */
  body: string | Uint8Array | ArrayBuffer;
  /** Default 300 s. */
  toleranceSeconds?: number;
  /** Current time in ms (tests). */
  now?: number | (() => number);
}

export declare function verifyWebhook<T = TriggerDelivery>(options: VerifyWebhookOptions): Promise<T>;
