import { request, type Dispatcher } from 'undici';

/** The baselines' one activity: the same POST a redeliver attempt makes, failing on a non-2xx answer. */
export function createBaselineActivities(http: Dispatcher) {
  return {
    async post(url: string, body: string, messageId: string): Promise<number> {
      const res = await request(url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'message-id': messageId },
        dispatcher: http,
        signal: AbortSignal.timeout(10_000),
      });
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}`);
      return res.statusCode;
    },
  };
}

export type BaselineActivities = ReturnType<typeof createBaselineActivities>;
