/**
 * Ordering keys on the suite's dev server (docs/ordering.md): deliveries of one key reach a real loopback
 * receiver in submit order through failures; what pause, cancel, retry now, redrive and release do to the
 * deliveries behind one in the middle of a key; keys do not hold each other up.
 */
import { randomUUID } from 'node:crypto';
import type { DeliveryInput } from '../../../src/delivery/types';
import { DeliveryControlError, InvalidInputError } from '../../../src/errors';
import { type OrderingCarried, orderingWorkflowId } from '../../../src/contract';
import { MAX_QUEUED } from '../../../src/workflows/ordering-state';
import { runCli } from '../../support/cli';
import { useHarnessAndReceiver } from '../../support/setup';
import { testAddress } from '../../support/temporal';
import { waitFor } from '../../support/wait';

const env = useHarnessAndReceiver();

const FAST = { jitter: 'none', initial: '100ms', min: '100ms', max: '100ms' } as const;
/** Retries a minute apart: a test acts while the delivery waits. */
const SLOW = { jitter: 'none', initial: '1m', min: '1m', max: '1m' } as const;

/** `n` messages of one new key to `path`, in submit order. */
function messagesOf(n: number, path: string, extra: Partial<DeliveryInput> = {}): DeliveryInput[] {
  const key = `k-${randomUUID().slice(0, 8)}`;
  return Array.from({ length: n }, (_, i) => ({
    kind: 'event',
    tenant: 'acme',
    device: key,
    orderingKey: key,
    messageId: `${key}-${i}`,
    payload: { i },
    target: `${env.receiver.url}${path}`,
    policy: FAST,
    ...extra,
  }));
}

/** These message ids, in the order of their first answer 2xx at the env.receiver. */
function firstArrivals(messageIds: readonly string[]): string[] {
  const wanted = new Set(messageIds);
  return env.receiver.firstAccepted().filter((id) => wanted.has(id));
}

const submitInOrder = async (inputs: DeliveryInput[]) => {
  const handles = [];
  for (const input of inputs) handles.push(await env.h.redeliver.submit(input));
  return handles;
};

test('deliveries of one key arrive in submit order, each only after the one before it has ended', async () => {
  // the first two fail twice each: without ordering, the later ones would overtake them
  env.receiver.route('/basic', ({ messageId, nth }) => (/-(0|1)$/.test(messageId!) && nth <= 2 ? { status: 503 } : { status: 202 }));
  const inputs = messagesOf(6, '/basic');
  const handles = await submitInOrder(inputs);
  const results = await Promise.all(handles.map((x) => x.result()));
  expect(results.map((r) => r.outcome)).toEqual(Array(6).fill('delivered'));
  expect(firstArrivals(inputs.map((i) => i.messageId!))).toEqual(inputs.map((i) => i.messageId));
  // one at a time: no request of a later message before the earlier one's success
  const requests = env.receiver.requests.filter((r) => r.path === '/basic' && inputs.some((i) => i.messageId === r.messageId));
  const indexOf = (id: string | undefined) => inputs.findIndex((i) => i.messageId === id);
  for (let n = 1; n < requests.length; n++)
    expect(indexOf(requests[n]!.messageId)).toBeGreaterThanOrEqual(indexOf(requests[n - 1]!.messageId));
  const key = inputs[0]!.orderingKey!;
  expect(await env.h.redeliver.ordering.status('acme', key)).toMatchObject({ state: 'idle', enqueued: 6, passed: 6 });
});

const statusOf = (deliveryId: string) => env.h.redeliver.getHandle(deliveryId).status();
const stateIs = (deliveryId: string, state: string) =>
  waitFor(
    () => statusOf(deliveryId),
    (s) => s.state === state,
    30_000,
    `${deliveryId} ${state}`,
  );
const ids = (inputs: DeliveryInput[]) => inputs.map((i) => i.messageId!);
const deliveryIdOf = (input: DeliveryInput) => `delivery/${input.tenant}/${input.device}/${input.messageId}`;
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (err: unknown) => (err instanceof DeliveryControlError ? { kind: err.kind, reason: err.reason } : err),
  );

test('a pause holds the key: nothing behind the paused delivery goes until it is resumed and has ended', async () => {
  env.receiver.route('/pause', ({ messageId, nth }) => (messageId!.endsWith('-1') && nth === 1 ? { status: 503 } : { status: 202 }));
  const inputs = messagesOf(3, '/pause', { policy: SLOW });
  const [, second, third] = (await submitInOrder(inputs)).map((x) => x.deliveryId);
  await stateIs(second!, 'waiting');
  await env.h.redeliver.getHandle(second!).pause('maintenance');
  // the one behind it says what it waits for, in its status and in the UI's details
  const queued = await waitFor(
    () => statusOf(third!),
    (s) => s.ordering?.behind === second,
    30_000,
    'the third queued behind the second',
  );
  expect(queued).toMatchObject({
    state: 'queued',
    attempts: 0,
    ordering: { key: inputs[0]!.orderingKey, admitted: false, blockedBy: null },
  });
  expect(queued.summary).toBe(`queued behind ${second} on the ordering key ${inputs[0]!.orderingKey}`);
  const resumedAt = Date.now();
  await env.h.redeliver.getHandle(second!).resume();
  await env.h.redeliver.getHandle(second!).retryNow();
  expect((await env.h.redeliver.getHandle(third!).result()).outcome).toBe('delivered');
  expect(firstArrivals(ids(inputs))).toEqual(ids(inputs));
  expect(env.receiver.of(inputs[2]!.messageId!)[0]!.at).toBeGreaterThanOrEqual(resumedAt);
});

test("retry now is refused for a queued delivery (it cannot overtake); for the key's head it goes at once, then the next", async () => {
  env.receiver.route('/retry-now', ({ messageId, nth }) => (messageId!.endsWith('-0') && nth === 1 ? { status: 503 } : { status: 202 }));
  const inputs = messagesOf(2, '/retry-now', { policy: SLOW });
  const [first, second] = (await submitInOrder(inputs)).map((x) => x.deliveryId);
  await stateIs(first!, 'waiting');
  await waitFor(
    () => statusOf(second!),
    (s) => s.state === 'queued',
    30_000,
    'the second queued',
  );
  expect(await refusal(env.h.redeliver.getHandle(second!).retryNow())).toEqual({
    kind: 'NotWaiting',
    reason: `the delivery is queued behind ${first} on its ordering key ${inputs[0]!.orderingKey}: it goes when every earlier one has ended`,
  });
  await env.h.redeliver.getHandle(first!).retryNow();
  expect((await env.h.redeliver.getHandle(second!).result()).outcome).toBe('delivered');
  expect(firstArrivals(ids(inputs))).toEqual(ids(inputs));
});

test('a cancel takes a queued delivery out (the rest keep their order) and lets the key go on past a cancelled head', async () => {
  env.receiver.route('/cancel', ({ messageId }) => (messageId!.endsWith('-0') ? { status: 503 } : { status: 202 }));
  const inputs = messagesOf(4, '/cancel', { policy: SLOW });
  const [first, second, third, fourth] = (await submitInOrder(inputs)).map((x) => x.deliveryId);
  await stateIs(first!, 'waiting');
  await waitFor(
    () => statusOf(third!),
    (s) => s.ordering?.behind === second,
    30_000,
    'the third queued',
  );
  expect(await env.h.redeliver.getHandle(second!).cancel()).toMatchObject({ state: 'cancelled', attempts: 0 });
  // the third now waits for the first
  await waitFor(
    () => statusOf(third!),
    (s) => s.ordering?.behind === first,
    30_000,
    'the third behind the first',
  );
  await env.h.redeliver.getHandle(first!).cancel();
  const results = await Promise.all([third!, fourth!].map((id) => env.h.redeliver.getHandle(id).result()));
  expect(results.map((r) => r.outcome)).toEqual(['delivered', 'delivered']);
  expect(env.receiver.of(inputs[1]!.messageId!)).toEqual([]);
  expect(firstArrivals(ids(inputs))).toEqual([inputs[2]!.messageId, inputs[3]!.messageId]);
});

test('a dead letter stops its key (other keys go on); redriven, it goes again in its place; a key released skips it', async () => {
  // each key's first message is refused once (a 400), then accepted
  env.receiver.route('/stop', ({ messageId, nth }) => (messageId!.endsWith('-0') && nth === 1 ? { status: 400 } : { status: 202 }));
  const [a, b, other] = [messagesOf(3, '/stop'), messagesOf(2, '/stop'), messagesOf(3, '/other')];
  const handles = await Promise.all([a, b, other].map(submitInOrder));
  const [a0, a1, a2] = handles[0]!.map((x) => x.deliveryId);
  const [b0, b1] = handles[1]!.map((x) => x.deliveryId);
  expect((await env.h.redeliver.getHandle(a0!).result()).outcome).toBe('rejected');
  // the next one says what stopped its key; the key's status too
  const stopped = await waitFor(
    () => statusOf(a1!),
    (s) => s.ordering?.blockedBy !== null && s.ordering?.blockedBy !== undefined,
    30_000,
    'a1 stopped',
  );
  expect(stopped.ordering!.blockedBy).toEqual({ deliveryId: a0, outcome: 'rejected' });
  expect(stopped.summary).toContain(`stopped by the dead letter ${a0} (rejected)`);
  const key = await env.h.redeliver.ordering.status('acme', a[0]!.orderingKey!);
  expect(key).toMatchObject({ state: 'blocked', head: null, queued: 2, queue: [{ deliveryId: a1 }, { deliveryId: a2 }] });
  // another key is not held up by it
  expect((await Promise.all(handles[2]!.map((x) => x.result()))).map((r) => r.outcome)).toEqual(['delivered', 'delivered', 'delivered']);
  expect(await refusal(env.h.redeliver.ordering.release('acme', other[0]!.orderingKey!))).toMatchObject({ kind: 'NotBlocked' });

  // redriven: it goes again at the head, and the rest follows it
  expect((await env.h.redeliver.redrive(a0!)).created).toBe(true);
  expect((await Promise.all([a0!, a1!, a2!].map((id) => env.h.redeliver.getHandle(id).result()))).map((r) => r.outcome)).toEqual([
    'delivered',
    'delivered',
    'delivered',
  ]);
  expect(firstArrivals(ids(a))).toEqual(ids(a));

  // released: the next one goes, the dead letter stays one
  expect((await env.h.redeliver.getHandle(b0!).result()).outcome).toBe('rejected');
  await waitFor(
    () => env.h.redeliver.ordering.status('acme', b[0]!.orderingKey!),
    (s) => s.state === 'blocked',
    30_000,
    'key b stopped',
  );
  expect(await env.h.redeliver.ordering.release('acme', b[0]!.orderingKey!)).toMatchObject({ blocked: null });
  expect((await env.h.redeliver.getHandle(b1!).result()).outcome).toBe('delivered');
  expect((await env.h.redeliver.getHandle(b0!).status()).state).toBe('rejected');
  expect(firstArrivals(ids(b))).toEqual([b[1]!.messageId]);
});

test("a batch's ordered messages skip its first attempts and go as their own deliveries, in the order given", async () => {
  const ordered = messagesOf(6, '/batch');
  // two ordered messages fail once: a batch's side-by-side attempts would let the ones after them overtake
  const failOnce = new Set([ordered[0]!.messageId, ordered[3]!.messageId]);
  env.receiver.route('/batch', ({ messageId, nth }) => (failOnce.has(messageId) && nth === 1 ? { status: 503 } : { status: 202 }));
  const unordered = messagesOf(4, '/batch').map(({ orderingKey: _key, ...rest }) => rest);
  // one submission cut into several batches: the order given holds across them
  const submission = await env.h.redeliver.submitBatch([...ordered, ...unordered], { maxMessages: 4 });
  expect(submission.batches.length).toBe(3);
  const outcomes = await submission.outcomes();
  expect(outcomes.every((o) => o.outcome === 'delivered')).toBe(true);
  const results = (await Promise.all(submission.batches.map((b) => b.result()))).flatMap((r) => r.results);
  const dispositions = Object.fromEntries(results.map((r) => [r.messageId, r.disposition]));
  for (const m of ordered) expect(dispositions[m.messageId!]).toBe('queued');
  for (const m of unordered) expect(dispositions[m.messageId!]).toBe('delivered');
  expect(firstArrivals(ids(ordered))).toEqual(ids(ordered));
  expect(env.receiver.of(ordered[0]!.messageId!).map((r) => r.attempt)).toEqual([1, 2]);
});

test('a resubmit keeps its place and sends nothing twice', async () => {
  env.receiver.route('/again', ({ messageId, nth }) => (messageId!.endsWith('-0') && nth === 1 ? { status: 503 } : { status: 202 }));
  const inputs = messagesOf(3, '/again', { policy: SLOW });
  const first = await submitInOrder(inputs);
  await stateIs(first[0]!.deliveryId, 'waiting');
  const again = await submitInOrder(inputs);
  expect(again.map((x) => x.created)).toEqual([false, false, false]);
  expect((await env.h.redeliver.ordering.status('acme', inputs[0]!.orderingKey!)).queued).toBe(2);
  await env.h.redeliver.getHandle(first[0]!.deliveryId).retryNow();
  await Promise.all(first.map((x) => x.result()));
  // resubmitted after they ended: the key does not wait for them
  await submitInOrder(inputs);
  expect(await env.h.redeliver.ordering.status('acme', inputs[0]!.orderingKey!)).toMatchObject({ head: null, queued: 0 });
  for (const id of ids(inputs)) expect(env.receiver.of(id).filter((r) => r.outcome === 202)).toHaveLength(1);
});

test('a key that holds MAX_QUEUED deliveries refuses another before starting it, naming orderingKey', async () => {
  const [input] = messagesOf(1, '/full');
  const key = input!.orderingKey!;
  // a sequencer whose run carried a full queue over (its deliveries need not exist: nothing gets to them)
  const carried: OrderingCarried = {
    run: 2,
    enqueued: MAX_QUEUED + 1,
    passed: 0,
    head: { deliveryId: `delivery/acme/${key}/head`, seq: 1, arrived: true, at: Date.now(), admitted: true, checkAt: Date.now() },
    queue: Array.from({ length: MAX_QUEUED }, (_, i) => ({
      deliveryId: `delivery/acme/${key}/q-${i}`,
      seq: i + 2,
      arrived: true,
      at: Date.now(),
    })),
    blocked: null,
    notices: [],
  };
  await env.h.client.workflow.start('orderingWorkflow', {
    workflowId: orderingWorkflowId('acme', key),
    taskQueue: env.h.taskQueue,
    args: [{ tenant: 'acme', key, carried }],
  });
  const refused = await env.h.redeliver.submit(input!).then(
    () => null,
    (err: unknown) => err,
  );
  expect(refused).toBeInstanceOf(InvalidInputError);
  expect((refused as InvalidInputError).problems).toEqual([
    { field: 'orderingKey', message: expect.stringContaining(`${key} has ${MAX_QUEUED} deliveries queued`) as string },
  ]);
  // nothing started
  await expect(env.h.client.workflow.getHandle(deliveryIdOf(input!)).describe()).rejects.toThrow(/not found/);
  await env.h.client.workflow.getHandle(orderingWorkflowId('acme', key)).terminate('test over');
});

test('from the shell: submit --ordering-key, status --json says what it waits for, list --ordering-key, release', async () => {
  const [first, second] = messagesOf(2, '/cli');
  env.receiver.route('/cli', ({ messageId, nth }) => (messageId === first!.messageId && nth === 1 ? { status: 400 } : { status: 202 }));
  const conn = ['--address', testAddress(), '--task-queue', env.h.taskQueue];
  const key = first!.orderingKey!;
  const flags = (m: DeliveryInput) => ({ kind: 'event', tenant: 'acme', device: m.device, id: m.messageId!, 'ordering-key': key });
  const submit = (m: DeliveryInput) =>
    runCli([
      'submit',
      ...Object.entries(flags(m)).flatMap(([f, v]) => [`--${f}`, v]),
      '--target',
      `${env.receiver.url}/cli`,
      '--json',
      ...conn,
    ]);
  expect((await submit(first!)).code).toBe(0);
  expect((await submit(second!)).code).toBe(0);
  expect((await env.h.redeliver.getHandle(deliveryIdOf(first!)).result()).outcome).toBe('rejected');

  const status = await waitFor(
    async () =>
      JSON.parse((await runCli(['status', deliveryIdOf(second!), '--json', ...conn])).stdout) as { state: string; ordering?: unknown },
    (s) => s.state === 'queued' && (s.ordering as { blockedBy: unknown } | undefined)?.blockedBy !== null,
    30_000,
    'the second queued behind the dead letter',
  );
  expect(status.ordering).toEqual({
    key,
    admitted: false,
    behind: deliveryIdOf(first!),
    blockedBy: { deliveryId: deliveryIdOf(first!), outcome: 'rejected' },
  });

  const list = await runCli(['list', '--tenant', 'acme', '--ordering-key', key, ...conn]);
  expect(list.code).toBe(0);
  expect(list.stdout.split('\n')).toEqual([
    `ordering key acme/${key}: stopped by the dead letter ${deliveryIdOf(first!)} (rejected): redrive it, or release the key; 1 queued behind it`,
    '#  STATE                     DELIVERY',
    `-  rejected (stops the key)  ${deliveryIdOf(first!)}`,
    `1  queued                    ${deliveryIdOf(second!)}`,
    '',
  ]);
  const bad = await runCli(['list', '--ordering-key', key, '--state', 'waiting', ...conn]);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--tenant: is required');
  expect(bad.stderr).toContain('--state: does not apply with --ordering-key');

  const released = await runCli(['release', '--tenant', 'acme', '--ordering-key', key, '--json', ...conn]);
  expect(released.code).toBe(0);
  expect(JSON.parse(released.stdout)).toMatchObject({ key, blocked: null });
  expect((await env.h.redeliver.getHandle(deliveryIdOf(second!)).result()).outcome).toBe('delivered');
  const again = await runCli(['release', '--tenant', 'acme', '--ordering-key', key, ...conn]);
  expect(again.code).toBe(4);
  expect(again.stderr).toContain('the key is not stopped');
});

test("a key's sequencer continues as new with its queue: the order holds across its runs", async () => {
  env.receiver.route('/runs', ({ messageId, nth }) => (/-(2|5)$/.test(messageId!) && nth === 1 ? { status: 503 } : { status: 202 }));
  const inputs = messagesOf(12, '/runs');
  const key = inputs[0]!.orderingKey!;
  // a sequencer with a short history: it continues as new every few messages, while deliveries are queued
  await env.h.client.workflow.start('orderingWorkflow', {
    workflowId: orderingWorkflowId('acme', key),
    taskQueue: env.h.taskQueue,
    args: [{ tenant: 'acme', key, historyLimit: 40 }],
  });
  const handles = await Promise.all(inputs.map((i) => env.h.redeliver.submit(i)));
  expect((await Promise.all(handles.map((x) => x.result()))).map((r) => r.outcome)).toEqual(Array(12).fill('delivered'));
  expect(firstArrivals(ids(inputs))).toEqual(ids(inputs));
  const status = await env.h.redeliver.ordering.status('acme', key);
  expect(status).toMatchObject({ state: 'idle', enqueued: 12, passed: 12 });
  expect(status.run).toBeGreaterThan(2);
});
