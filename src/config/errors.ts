import { RedeliverError, recognisedAcrossCopies } from '../errors';

/** One problem with the configuration, naming the environment variable (or option) it came from. */
export interface ConfigProblem {
  variable: string;
  message: string;
}

/** Configuration refused at start; lists every problem found at once, each naming its variable. */
export class ConfigError extends RedeliverError {
  static {
    recognisedAcrossCopies(this, 'ConfigError');
  }
  override readonly name = 'ConfigError';
  constructor(readonly problems: ConfigProblem[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p.variable}: ${p.message}`).join('\n')}`);
  }
}

export type Environment = Record<string, string | undefined>;

/** Reads variables, collecting a problem for each bad one instead of stopping at the first. */
export class EnvReader {
  readonly problems: ConfigProblem[] = [];

  constructor(readonly env: Environment = process.env) {}

  /** The value, trimmed; undefined when unset or empty (an empty variable counts as unset, as in Docker). */
  string(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value ? value : undefined;
  }

  problem(variable: string, message: string): undefined {
    this.problems.push({ variable, message });
    return undefined;
  }

  /** A whole number ≥ 1, or the fallback when unset. */
  positiveInt(name: string, fallback: number): number;
  positiveInt(name: string, fallback?: number): number | undefined;
  positiveInt(name: string, fallback?: number): number | undefined {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) return this.problem(name, `must be a whole number above 0, got ${JSON.stringify(raw)}`) ?? fallback;
    return n;
  }

  /** `true`/`1` or `false`/`0` (Temporal's envconfig reads anything else as false without a word: refuse it). */
  boolean(name: string): boolean | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    if (/^(true|1)$/i.test(raw)) return true;
    if (/^(false|0)$/i.test(raw)) return false;
    return this.problem(name, `must be true or false, got ${JSON.stringify(raw)}`);
  }

  /** `host:port` (IPv6 hosts in brackets); with `bind`, the host may be empty or `0.0.0.0` too. */
  hostPort(name: string, example: string): string | undefined {
    const raw = this.string(name);
    if (raw === undefined) return undefined;
    const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):(\d{1,5})$/.exec(raw);
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535)
      return this.problem(name, `must be host:port, e.g. ${example}; got ${JSON.stringify(raw)}`);
    return raw;
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const found = values.find((v) => v.toLowerCase() === raw.toLowerCase());
    if (found === undefined) return this.problem(name, `must be one of ${values.join(', ')}; got ${JSON.stringify(raw)}`) ?? fallback;
    return found;
  }

  /** Throws a ConfigError listing every problem, if there is any. */
  done(): void {
    if (this.problems.length) throw new ConfigError(this.problems);
  }
}
