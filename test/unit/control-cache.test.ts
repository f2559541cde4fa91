import type { Client } from '@temporalio/client';
import { ControlCache } from '../../src/worker-services/control-cache';
import type { EndpointControl } from '../../src/endpoints/controls';

/*
 * A worker's copy of an endpoint's control (issue 31): a copy older than its time to live is read again before
 * an attempt uses it, however long the endpoint was quiet; a younger one is used as it is. The clock is the test's.
 */

const TTL = 2_000;
const active: EndpointControl = { settings: {} };
const paused: EndpointControl = { settings: {}, mode: { state: 'paused', reason: 'maintenance', since: 0, by: 'operator' } };

/** A client whose endpoint workflow's memo holds `memo.control`, counting the reads. */
function fakeClient(memo: { control: EndpointControl }) {
  const reads = { count: 0 };
  const client = {
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    workflow: {
      getHandle: () => ({
        describe: async () => {
          reads.count++;
          return { memo: { control: memo.control } };
        },
      }),
    },
  } as unknown as Client;
  return { client, reads };
}

test('after a quiet spell longer than the time to live, the first attempt reads the control again and obeys it', async () => {
  const memo = { control: active };
  const { client, reads } = fakeClient(memo);
  let now = 1_000_000;
  const cache = new ControlCache(client, 'q', TTL, () => now);
  expect(await cache.get('e:1')).toEqual(active);
  // a minute of nothing, then the operator pauses the endpoint: the next attempt must see the pause
  now += 60_000;
  memo.control = paused;
  expect(await cache.get('e:1')).toEqual(paused);
  expect(reads.count).toBe(2);
  // and enabled again after another quiet spell
  now += TTL + 1;
  memo.control = active;
  expect(await cache.get('e:1')).toEqual(active);
});

test('a copy younger than the time to live is used as it is; a busy endpoint is read again in the background at half of it', async () => {
  const memo = { control: active };
  const { client, reads } = fakeClient(memo);
  let now = 1_000_000;
  const cache = new ControlCache(client, 'q', TTL, () => now);
  await cache.get('e:1');
  memo.control = paused;
  now += TTL / 2;
  expect(await cache.get('e:1')).toEqual(active);
  expect(reads.count).toBe(1);
  now += 1;
  // this attempt goes on the copy (within its time to live); the read it started brings the next one up to date
  expect(await cache.get('e:1')).toEqual(active);
  await cache.refresh('e:1');
  expect(reads.count).toBe(3);
  expect(await cache.get('e:1')).toEqual(paused);
});
