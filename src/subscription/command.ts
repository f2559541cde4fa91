/** A command topic read as Eclipse Hono writes it: `command/<tenant>/<device>/req/<request-id>/<name>`. */
export interface CommandTopic {
  /** null for a one-way command (an empty request id), or a topic that is not Hono's. */
  requestId: string | null;
  /** The command's name; the whole topic when it is not Hono's form. */
  name: string;
}

/**
 * Parses a command's topic. Hono sends two-way commands on `command/<tenant>/<device>/req/<request-id>/<name>`
 * (tenant and device may be empty: `command///req/…`), one-way commands with an empty request id.
 */
export function parseCommandTopic(topic: string): CommandTopic {
  const levels = topic.split('/');
  if (levels.length >= 6 && levels[0] === 'command' && levels[3] === 'req') {
    const requestId = levels[4] ?? '';
    return { requestId: requestId === '' ? null : requestId, name: levels.slice(5).join('/') };
  }
  return { requestId: null, name: topic };
}

/** The `Command-Status` header a callback may answer with: an HTTP-style status 200–599, or undefined. */
export function commandStatusOf(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\s*\d{3}\s*$/.test(value)) return undefined;
  const status = Number(value);
  return status >= 200 && status <= 599 ? status : undefined;
}
