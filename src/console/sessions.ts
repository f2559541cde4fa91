import { randomBytes } from 'node:crypto';
import type { ApiKey } from '../api/keys';

/** The console's session cookie: HttpOnly, SameSite=Strict, only under /console. */
export const SESSION_COOKIE = 'redeliver_console';

/** How long a session lasts without a request (each request renews it). */
export const SESSION_IDLE_MS = 30 * 60_000;

/** At most this many sessions at once: the oldest goes first (a sign-in flood cannot grow the server's memory). */
export const MAX_SESSIONS = 10_000;

interface Session {
  key: ApiKey;
  expiresAt: number;
}

/**
 * Signed-in consoles, in the memory of the server that signed them in: a session id (32 random bytes) names the
 * key it signed in with. The key itself is never kept, only the server's hashed record of it. A restart signs
 * everyone out.
 */
export class ConsoleSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(private readonly now: () => number = Date.now) {}

  /** A new session for `key`; its id goes in the cookie. */
  open(key: ApiKey): string {
    const id = randomBytes(32).toString('base64url');
    if (this.sessions.size >= MAX_SESSIONS) this.sessions.delete(this.sessions.keys().next().value!);
    this.sessions.set(id, { key, expiresAt: this.now() + SESSION_IDLE_MS });
    return id;
  }

  /** The key of a live session (renewed by the call), or null: unknown, expired, or signed out. */
  keyOf(id: string | undefined): ApiKey | null {
    if (!id) return null;
    const session = this.sessions.get(id);
    if (!session) return null;
    if (session.expiresAt <= this.now()) {
      this.sessions.delete(id);
      return null;
    }
    // renewed: moved to the end, so that the oldest-first eviction drops the least recently used
    this.sessions.delete(id);
    this.sessions.set(id, { ...session, expiresAt: this.now() + SESSION_IDLE_MS });
    return session.key;
  }

  close(id: string | undefined): void {
    if (id) this.sessions.delete(id);
  }
}
