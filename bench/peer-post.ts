import { request, type Agent } from 'undici';

/** What a peer's producer puts in each job (bullmq.ts, pgboss.ts). */
export interface PostJob {
  url: string;
  messageId: string;
  body: string;
}

/** A peer worker's whole attempt: the job's body POSTed to the sink with its message id; a non-2xx throws (the peer retries). */
export async function postJob({ url, messageId, body }: PostJob, dispatcher: Agent): Promise<void> {
  const res = await request(url, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/json', 'message-id': messageId },
    body,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  await res.body.dump();
  if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}`);
}
