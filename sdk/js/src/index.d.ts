export declare const VERSION: string;

export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  request_id?: string;
  retry_after?: number;
  connect_url?: string;
}

export declare class CompanionError extends Error {
  constructor(status: number, problem?: Problem);
  status: number;
  code: string | null;
  detail: string | null;
  requestId: string | null;
  retryAfter: number | null;
  connectUrl: string | null;
}

export interface ClientOptions {
  apiKey?: string;
  baseUrl?: string;
  fetch?: typeof fetch;
}

export declare class Client {
  constructor(options?: ClientOptions);
  apiKey: string | undefined;
  baseUrl: string;
  catalog(options?: { cursor?: string; category?: string }): Promise<unknown>;
  request(method: string, path: string, body?: unknown, options?: { auth?: boolean }): Promise<unknown>;
}
