import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteInput } from '../api/invoke';
import type { ApiKey } from '../api/keys';
import type { ApiContext } from '../api/routes';

/** What the console's pages work with. */
export interface ConsoleOptions {
  keys: readonly ApiKey[];
  api: ApiContext;
  /** Served over HTTPS: its cookies are Secure. */
  secure: boolean;
  /** The Temporal UI a delivery's page links to (`http://localhost:8233`); null: no link. */
  temporalUi: string | null;
  namespace: string;
}

/** What a page handler has: the signed-in key, a way to call the API's routes with it, and to render. */
export interface ConsolePage {
  key: ApiKey;
  call(operationId: string, input: RouteInput): Promise<unknown>;
  render(view: string, data: Record<string, unknown>, status?: number): FastifyReply;
}

export type PageHandler = (page: ConsolePage, req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** What registerDeliveryPages and registerEndpointPages use to add their pages. */
export interface ConsoleScope {
  options: ConsoleOptions;
  get(url: string, handler: PageHandler): void;
  post(url: string, handler: PageHandler): void;
}
