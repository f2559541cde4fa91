/** What an unchanged retry can expect; see docs/error-classification.md. */
export type ErrorClass = 'client' | 'well-known' | 'server' | 'connection';

/** A class, or success (an override may turn a code into success, e.g. 409 → delivered). */
export type Verdict = ErrorClass | 'success';

/** What a transport saw on one attempt. */
export type TransportOutcome =
  | { kind: 'http'; status: number; headers?: Record<string, string | string[] | undefined> }
  | { kind: 'network'; code: string; message?: string }
  | { kind: 'timeout'; afterMs: number }
  | { kind: 'tls'; code: string; message?: string }
  | { kind: 'invalid-target'; message: string };

export interface Classification {
  class: Verdict;
  /** Whether an unchanged retry can succeed. */
  retryable: boolean;
  /** Stable code: `http-503`, `net-ECONNRESET`, `timeout`, `tls-…`, … */
  code: string;
  /** One sentence an operator understands. */
  reason: string;
  /** The server's hint of how long to wait (Retry-After, quota reset), when it gave a usable one. */
  retryAfterMs?: number;
}

/** Per-delivery overrides: a stable code (`http-409`) mapped to another verdict. */
export type ClassOverrides = Record<string, Verdict>;
