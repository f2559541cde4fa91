import { STATUS_CODES } from 'node:http';
import { WorkflowNotFoundError } from '@temporalio/client';
import { ConfigError } from '../config/errors';
import { ConflictError, DeliveryControlError, InvalidInputError, type Problem, type RefusalKind } from '../errors';

/** An answer other than success: RFC 9457 problem details, with the client API's problems list where there is one. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly extra: { problems?: Problem[]; kind?: RefusalKind; headers?: Record<string, string> } = {},
  ) {
    super(detail);
  }

  body() {
    const { problems, kind } = this.extra;
    return {
      type: 'about:blank',
      title: STATUS_CODES[this.status] ?? 'Error',
      status: this.status,
      detail: this.detail,
      ...(problems && { problems }),
      ...(kind && { kind }),
    };
  }
}

export const notFound = (what: string) => new HttpProblem(404, `no ${what} of this key's tenants has that id`);

/** How long a client should wait before trying again while Temporal is unreachable, in seconds. */
export const UNAVAILABLE_RETRY_AFTER_S = 5;

/** gRPC status codes that say Temporal could not be reached (UNAVAILABLE, DEADLINE_EXCEEDED). */
const UNREACHABLE = new Set([14, 4]);

/** The gRPC status code of a Temporal call's failure, if it is one. */
function grpcCode(err: unknown): number | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'number') return e.code;
  }
  return undefined;
}

/** Whether a failure says Temporal is unreachable (the API then answers 503). */
function isUnreachable(err: unknown): boolean {
  const code = grpcCode(err);
  return code !== undefined && UNREACHABLE.has(code);
}

/**
 * The answer for what a route threw: the client API's errors keep their meaning (bad input 400, a clash 409, a
 * refused control 409), Fastify's keep their status (413, 415, a body that is not JSON), Temporal away is 503.
 */
export function problemOf(err: unknown): HttpProblem {
  if (err instanceof HttpProblem) return err;
  if (err instanceof InvalidInputError) {
    const detail = err.problems.map((p) => `${p.field}: ${p.message}`).join('; ');
    return new HttpProblem(err instanceof ConflictError ? 409 : 400, detail, { problems: err.problems });
  }
  if (err instanceof DeliveryControlError) return new HttpProblem(409, err.message, { kind: err.kind });
  if (err instanceof WorkflowNotFoundError) return new HttpProblem(404, "nothing of this key's tenants has that id");
  if (isUnreachable(err)) {
    const headers = { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_S) };
    return new HttpProblem(503, 'Temporal is unreachable: try again later', { headers });
  }
  // Temporal refused what it was asked (a page cursor that is none of its own)
  if (grpcCode(err) === 3) return new HttpProblem(400, 'Temporal refused the request: is the cursor one this API gave?');
  const status = (err as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) return new HttpProblem(status, (err as Error).message);
  // a misconfigured server (keys missing) says which variable; anything else is ours to fix
  if (err instanceof ConfigError) return new HttpProblem(500, err.message);
  return new HttpProblem(500, 'internal error: see the server log');
}
