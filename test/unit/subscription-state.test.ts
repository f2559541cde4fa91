import { ApplicationFailure } from '@temporalio/common';
import { type AttemptFailureDetails, type CarriedSubscription, type HandOff, type HoldFailureDetails } from '../../src/contract';
import type { ReceivedCommand } from '../../src/subscription/types';
import { validateSubscription } from '../../src/validation/subscription';
import { validateDelivery } from '../../src/validation/delivery';
import { SubscriptionTracker } from '../../src/workflows/subscription-state';

// A command subscription's state and decisions without a server: the workflow runs them
// (workflows/command-subscription.ts) and the activities and timers they decide.

const T0 = Date.parse('2026-11-21T12:00:00Z');
const iso = (t: number) => new Date(t).toISOString();
const input = {
  tenant: 'acme',
  device: 'sensor-1',
  broker: 'mqtt://broker.example.com:1883',
  callback: 'https://app.example.com/commands',
};
// no jitter: 1 s, 2 s, 4 s, …; downtime after 1 min
const POLICY = { jitter: 'none', initial: 1_000, min: 0, multiplier: 2 };

function tracked(overrides: Record<string, unknown> = {}, carried?: CarriedSubscription) {
  const sub = validateSubscription({ ...input, policy: POLICY, ...overrides }, { now: T0 });
  const clock = { t: T0 };
  const warnings: string[] = [];
  const effects = { details: () => undefined, upsert: () => undefined, warn: (m: string) => warnings.push(m) };
  const s = new SubscriptionTracker(sub, carried, { effects, now: () => clock.t, random: () => 0.5 });
  return { s, sub, clock, warnings };
}

const lost = (at: number, over: Partial<HoldFailureDetails> = {}): HoldFailureDetails => ({
  class: 'connection',
  retryable: true,
  code: 'net-ECONNREFUSED',
  reason: 'connection refused',
  durationMs: 5,
  lostAt: at,
  subscribedAt: null,
  ...over,
});

const command = (requestId: string | null, receivedAt = T0): Omit<ReceivedCommand, 'seq'> => ({
  topic: `command/acme/sensor-1/req/${requestId ?? ''}/setTemp`,
  requestId,
  name: 'setTemp',
  payload: '21',
  encoding: 'utf8',
  contentType: null,
  receivedAt,
});

describe('holding the subscription', () => {
  test('a failed subscribe is retried with the backoff, shown as waiting with the time without a subscription', () => {
    const { s, clock } = tracked();
    expect(s.startHold()).toBe(1);
    expect(s.status()).toMatchObject({
      state: 'connecting',
      holds: 1,
      summary: 'subscribing to command/acme/sensor-1/req/# on broker.example.com:1883 (attempt 1)',
    });
    clock.t += 200;
    s.holdEnded(lost(clock.t));
    const wait = s.holdFailed(lost(clock.t), 1);
    expect(wait).toEqual({
      delay: 1_000,
      words: expect.stringMatching(/^resubscribing in 1 s after ECONNREFUSED — attempt 2 next; without a subscription for 0.2 s$/),
    });
    expect(s.status()).toMatchObject({
      state: 'waiting',
      attempts: 1,
      nextAttemptAt: iso(T0 + 1_200),
      lastError: { class: 'connection', code: 'net-ECONNREFUSED', reason: 'connection refused', attempt: 1, at: iso(T0 + 200) },
      downtime: { current: expect.objectContaining({ reason: 'not subscribed yet' }) },
    });
    s.waited();
    expect(s.status().nextAttemptAt).toBeNull();
    // the second failure waits twice as long
    expect(s.startHold()).toBe(2);
    s.holdEnded(lost(clock.t));
    expect(s.holdFailed(lost(clock.t), 2)).toMatchObject({ delay: 2_000 });
  });

  test('a working subscription resets the backoff and ends the spell; one past the threshold is logged as downtime', () => {
    const { s, clock, warnings } = tracked();
    s.startHold();
    s.holdEnded(lost(T0));
    s.holdFailed(lost(T0), 1);
    s.startHold();
    // a late word from the first hold says nothing about now
    s.subscribed(1, T0 + 500);
    expect(s.status().state).toBe('connecting');
    clock.t = T0 + 90_000;
    s.subscribed(2, clock.t);
    expect(s.status()).toMatchObject({
      state: 'subscribed',
      attempts: 0,
      subscribedSince: iso(T0 + 90_000),
      downtime: { totalMs: 90_000 },
    });
    expect(warnings).toEqual(['downtime: 1 min 30 s without a working command subscription (not subscribed yet)']);
    // lost again: the backoff starts over at 1 s
    clock.t += 10_000;
    s.holdEnded(lost(clock.t - 1_000));
    expect(s.holdFailed(lost(clock.t - 1_000), 2)).toMatchObject({ delay: 1_000 });
    expect(s.status().downtime.current).toMatchObject({ since: iso(T0 + 99_000), reason: 'connection refused' });
  });

  test('a renewed hold is no outage; the time the activity says it lost the subscription is kept within the hold', () => {
    const { s, clock } = tracked();
    s.startHold();
    s.subscribed(1, T0 + 100);
    clock.t = T0 + 86_400_000;
    s.holdEnded(undefined);
    expect(s.status().downtime).toMatchObject({ outages: 0, current: expect.objectContaining({ reason: 'renewing the subscription' }) });

    const other = tracked();
    other.s.startHold();
    other.s.subscribed(1, T0 + 100);
    other.clock.t = T0 + 5_000;
    // a lost worker's last heartbeat before the subscription began: the loss counts from the subscription
    other.s.holdEnded(lost(T0));
    expect(other.s.status().downtime.current).toMatchObject({ since: iso(T0 + 100) });
  });

  test('a client error ends the subscription rejected; the policy bounds end it exhausted', () => {
    const { s } = tracked();
    s.startHold();
    const refused = lost(T0, { class: 'client', retryable: false, code: 'mqtt-0x87', reason: 'not authorized' });
    s.holdEnded(refused);
    expect(s.holdFailed(refused, 1)).toBeNull();
    expect(s.continuesAsNew).toBe(false);
    s.ending();
    expect(s.status()).toMatchObject({ state: 'stopping', summary: 'rejected: not authorized' });
    s.noMoreCommands();
    expect(s.result()).toMatchObject({
      outcome: 'rejected',
      reason: 'not authorized',
      lastError: { code: 'mqtt-0x87' },
      commands: { received: 0, queued: 0 },
    });
    expect(s.status()).toMatchObject({ state: 'rejected', summary: 'rejected: not authorized' });

    const bounded = tracked({ policy: { ...POLICY, maxAttempts: 1 } });
    bounded.s.startHold();
    bounded.s.holdEnded(lost(T0));
    expect(bounded.s.holdFailed(lost(T0), 1)).toBeNull();
    expect(bounded.s.result()).toMatchObject({ outcome: 'exhausted', reason: '1 of 1 attempts made; last error: connection refused' });
  });
});

describe('stop and continue-as-new', () => {
  test('stop is asked once; the subscription then holds no more and ends stopped with the reason', () => {
    const { s } = tracked();
    s.startHold();
    expect(s.holding).toBe(true);
    expect(s.requestStop('')).toMatchObject({ subscriptionId: 'subscription/acme/sensor-1' });
    expect(s.holding).toBe(false);
    expect(s.stopping).toBe(true);
    let refusal: unknown;
    try {
      s.checkStop();
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(ApplicationFailure);
    expect(refusal).toMatchObject({ type: 'AlreadyStopping', message: 'the subscription is already stopping' });
    // a long history does not turn a stop into a continue-as-new: the commands received are still handed over
    s.received(command('r-1'));
    s.rotateIf(true);
    expect(s.continuesAsNew).toBe(false);
    expect(s.nextCommand()).toMatchObject({ requestId: 'r-1' });
    s.ending();
    expect(s.status().summary).toBe('stopping: stopped by request');
    expect(s.result()).toMatchObject({ outcome: 'stopped', reason: 'stopped by request' });
  });

  test('a long history ends the hold and the command loop, and the next run gets everything, queued commands too', () => {
    const { s, sub, clock } = tracked();
    s.startHold();
    s.subscribed(1, T0 + 100);
    s.received(command('r-1'));
    s.received(command('r-2'));
    s.rotateIf(false);
    expect(s.holding).toBe(true);
    s.rotateIf(true);
    expect(s.holding).toBe(false);
    expect(s.continuesAsNew).toBe(true);
    expect(s.nextCommand()).toBeNull();
    expect(s.commandsToHandle).toBe(true);
    clock.t += 1_000;
    s.holdEnded(undefined);
    const carried = s.carried();
    expect(carried).toMatchObject({ run: 2, holds: 1, attempts: 0, seq: 2, seen: ['r-1', 'r-2'], counts: { received: 2 } });
    expect(carried.queue.map((c) => c.seq)).toEqual([1, 2]);

    const effects = { details: () => undefined, upsert: () => undefined, warn: () => undefined };
    const next = new SubscriptionTracker(sub, carried, { effects, now: () => clock.t });
    expect(next.nextCommand()).toMatchObject({ seq: 1, requestId: 'r-1' });
    // the broker sends r-2 again after the new run subscribed: it is queued once
    next.received(command('r-2'));
    next.received(command('r-3'));
    expect(next.status()).toMatchObject({ holds: 1, commands: { received: 3, queued: 3 } });
    expect(next.startHold()).toBe(2);
    expect(next.carried().run).toBe(3);
  });
});

describe('commands', () => {
  const handOff = (over: Partial<HandOff> = {}): HandOff => ({
    code: 'http-200',
    reason: 'HTTP 200',
    durationMs: 4,
    httpStatus: 200,
    response: null,
    ...over,
  });
  const failure = (over: Partial<AttemptFailureDetails> = {}): AttemptFailureDetails => ({
    class: 'server',
    retryable: true,
    code: 'http-503',
    reason: 'HTTP 503',
    durationMs: 3,
    ...over,
  });

  test('received in order, a resent request id once; the recent list and the counts follow each hand-over', () => {
    const { s } = tracked();
    s.received(command('r-1'));
    s.received(command('r-1'));
    s.received(command(null));
    s.received(command(null));
    expect(s.status().commands).toEqual({ received: 3, handed: 0, responded: 0, failed: 0, queued: 3 });

    const first = s.nextCommand()!;
    expect(first).toMatchObject({ seq: 1, requestId: 'r-1' });
    s.handing(first.seq);
    expect(s.status().recentCommands[0]).toMatchObject({ seq: 1, outcome: 'handing', receivedAt: iso(T0) });
    const answer = { kind: 'command-response', tenant: 'acme', device: 'sensor-1', messageId: 'resp-r-1', payload: 'ok' };
    const target = 'https://ingest.example.com/r';
    const response = validateDelivery({ ...answer, target, command: { requestId: 'r-1', status: 200 } }, { now: T0 });
    expect(s.handed(first.seq, handOff({ response }))).toBe(response);
    s.responded(first.seq, 'http-200', response);
    s.commandDone();

    const second = s.nextCommand()!;
    expect(s.handed(second.seq, handOff())).toBeNull();
    s.commandDone();
    const third = s.nextCommand()!;
    s.handed(third.seq, handOff());
    s.responseNotStarted(third.seq);
    s.commandDone();
    expect(s.nextCommand()).toBeNull();
    expect(s.commandsToHandle).toBe(false);
    expect(s.status().commands).toEqual({ received: 3, handed: 3, responded: 1, failed: 1, queued: 0 });
    expect(s.status().recentCommands.map((r) => [r.seq, r.outcome, r.code, r.status, r.responseId])).toEqual([
      [1, 'responded', 'http-200', 200, response.deliveryId],
      [2, 'handed', 'http-200', null, null],
      [3, 'rejected', 'response-not-started', null, null],
    ]);
    // stopping: the loop ends once the queue is empty
    s.noMoreCommands();
    expect(s.commandsToHandle).toBe(true);
  });

  test('a failed hand-over: a client error rejects the command, others retry until commandMaxAge from its receipt', () => {
    const { s, clock } = tracked({ commandMaxAge: '10s' });
    s.received(command('r-1', T0));
    s.received(command('r-2', T0));
    const c1 = s.nextCommand()!;
    expect(s.handOverFailed(c1, failure({ class: 'client', code: 'http-404' }), { count: 1, previousDelay: null })).toBeNull();
    s.commandDone();
    const c2 = s.nextCommand()!;
    expect(s.handOverFailed(c2, failure(), { count: 1, previousDelay: null })).toBe(1_000);
    clock.t = T0 + 9_500;
    expect(s.handOverFailed(c2, failure({ code: 'net-ECONNRESET' }), { count: 5, previousDelay: 8_000 })).toBeNull();
    expect(s.status().recentCommands.map((r) => [r.outcome, r.code])).toEqual([
      ['rejected', 'http-404'],
      ['expired', 'net-ECONNRESET'],
    ]);
    expect(s.status().commands).toMatchObject({ failed: 2 });
  });

  test('the recent list keeps 20 commands, and 1,000 request ids are remembered', () => {
    const { s } = tracked();
    for (let i = 0; i < 1_005; i++) s.received(command(`r-${i}`));
    expect(s.status().recentCommands.map((r) => r.seq)).toEqual(Array.from({ length: 20 }, (_, i) => 986 + i));
    // r-0 … r-4 are forgotten: sent again, they are received again
    s.received(command('r-0'));
    s.received(command('r-1004'));
    expect(s.status().commands.received).toBe(1_006);
  });
});
