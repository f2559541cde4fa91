import { EndpointAdmission, NO_ROOM, RATE, type Admission } from '../../src/worker-services/admission';
import { passLimits } from '../../src/worker-services/limits';
import { RankedQueue } from '../../src/worker-services/ranked-queue';
import { checkSettingsChange } from '../../src/endpoints/controls';
import { mostUrgent, RankedCells, rankOf, type Priority } from '../../src/endpoints/priority';
import type { MessageKind } from '../../src/policy/types';
import { validateDelivery } from '../../src/validation/delivery';

// Deadline-first (docs/endpoint-health.md): who gets an endpoint's scarce slots, on a fake clock.

const COMMAND = 0;
const EVENT = 1;
const TELEMETRY = 2;

describe('ranks', () => {
  test('command responses before events before telemetry; fifo, or no kind known, all alike', () => {
    const kinds: MessageKind[] = ['command-response', 'event', 'telemetry'];
    expect(kinds.map((k) => rankOf(k, undefined))).toEqual([COMMAND, EVENT, TELEMETRY]);
    expect(kinds.map((k) => rankOf(k, 'deadline-first'))).toEqual([0, 1, 2]);
    expect(kinds.map((k) => rankOf(k, 'fifo'))).toEqual([0, 0, 0]);
    expect(rankOf(undefined, 'deadline-first')).toBe(0);
    expect(mostUrgent(['telemetry', 'event', 'telemetry'])).toBe('event');
  });

  test('the setting: deadline-first, fifo, or null for the default; anything else named', () => {
    expect(checkSettingsChange({ priority: 'fifo' })).toEqual({ change: { priority: 'fifo' }, problems: [] });
    expect(checkSettingsChange({ priority: null }).change).toEqual({ priority: null });
    expect(checkSettingsChange({ priority: 'urgent' }).problems).toEqual([
      { field: 'priority', message: 'must be "deadline-first", "fifo", or null for the default; got "urgent"' },
    ]);
  });
});

describe('RankedCells', () => {
  test('a command response that comes late takes a cell ahead of the telemetry that took them first; the telemetry after moves back', () => {
    const cells = new RankedCells();
    expect([0, 1, 2, 3].map(() => cells.take(TELEMETRY, 0, 100).at)).toEqual([0, 100, 200, 300]);
    expect(cells.take(COMMAND, 0, 100).at).toBe(0);
    expect(cells.take(EVENT, 0, 100).at).toBe(100);
    expect(cells.take(COMMAND, 0, 100).at).toBe(100);
    // four telemetry cells, and three the others took among them
    expect(cells.take(TELEMETRY, 0, 100).at).toBe(700);
    // the telemetry a command response displaced takes the gap its cell left, not one behind the rest
    expect(cells.take(TELEMETRY, 0, 100, Infinity, true).at).toBe(400);
  });

  test('one rank is a plain cell rate; a cell after notAfter is told, not taken', () => {
    const cells = new RankedCells();
    expect([0, 1, 2].map(() => cells.take(COMMAND, 1_000, 50).at)).toEqual([1_000, 1_050, 1_100]);
    expect(cells.take(COMMAND, 1_000, 50, 1_120)).toEqual({ at: 1_150, taken: false });
    expect(cells.take(COMMAND, 1_000, 50)).toEqual({ at: 1_150, taken: true });
    expect(cells.take(COMMAND, 5_000, 50).at).toBe(5_000);
  });
});

test('RankedQueue: by rank, then in arrival order', () => {
  const queue = new RankedQueue();
  const served: string[] = [];
  const wake = (name: string) => () => void served.push(name);
  queue.push(TELEMETRY, wake('t1'));
  queue.push(TELEMETRY, wake('t2'));
  const e1 = wake('e1');
  queue.push(EVENT, e1);
  queue.push(COMMAND, wake('c1'));
  queue.push(EVENT, wake('e2'));
  expect([queue.ahead(COMMAND), queue.ahead(EVENT), queue.ahead(TELEMETRY)]).toEqual([1, 3, 5]);
  expect(queue.remove(e1)).toBe(true);
  while (queue.length) queue.shift()!();
  expect(served).toEqual(['c1', 'e2', 't1', 't2']);
});

describe('EndpointAdmission, deadline-first', () => {
  const endpoint = 'ingest.example.com';
  const T0 = 1_000_000;
  beforeEach(() => jest.useFakeTimers({ now: T0 }));
  afterEach(() => jest.useRealTimers());

  const admissionOf = (rate: number, priority?: Priority) =>
    new EndpointAdmission({
      defaults: { maxInFlight: null, rate },
      control: () => Promise.resolve({ settings: { ...(priority && { priority }) } }),
    });
  const at = (a: Admission) => (!a.go && 'at' in a ? a.at - T0 : a.go ? 'go' : 'held');

  test.each([
    ['deadline-first', 1_000],
    ['fifo', 5_000],
  ] as const)('%s: a command response after four telemetry told their cells (1/s) is told %i ms', async (priority, expected) => {
    const admission = admissionOf(1, priority);
    const telemetry = [];
    for (let i = 0; i < 5; i++) telemetry.push(at(await admission.ask(endpoint, { kind: 'telemetry' })));
    expect(telemetry).toEqual(['go', 1_000, 2_000, 3_000, 4_000]);
    expect(at(await admission.ask(endpoint, { kind: 'command-response' }))).toBe(expected);
  });

  test('both back for the same cell: the telemetry, first there, yields it and takes the gap the command response left; the command response goes', async () => {
    const admission = admissionOf(1);
    await admission.ask(endpoint, { kind: 'telemetry' });
    const told = await admission.ask(endpoint, { kind: 'telemetry' });
    const command = await admission.ask(endpoint, { kind: 'command-response' });
    expect([at(told), at(command)]).toEqual([1_000, 1_000]);
    jest.setSystemTime(T0 + 1_000);
    const back = (a: Admission, kind: MessageKind) => admission.ask(endpoint, { kind, reserved: true, reservedAt: 'at' in a ? a.at : 0 });
    expect(at(await back(told, 'telemetry'))).toBe(2_000);
    expect(at(await back(command, 'command-response'))).toBe('go');
    // with nobody above it due, the telemetry takes its new cell
    jest.setSystemTime(T0 + 2_000);
    expect(at(await back({ go: false, at: T0 + 2_000, reason: RATE }, 'telemetry'))).toBe('go');
  });

  test('waiting here for the next cell (10/s): a command response that joins last goes first, the strict bound still one per cell', async () => {
    const admission = admissionOf(10);
    const went: [string, number][] = [];
    const ask = (name: string, kind: MessageKind) =>
      admission.ask(endpoint, { kind, reserved: true }).then((a) => a.go && went.push([name, Date.now() - T0]));
    await admission.ask(endpoint, { kind: 'telemetry' });
    const asked = [ask('t1', 'telemetry'), ask('t2', 'telemetry'), ask('e1', 'event'), ask('c1', 'command-response')];
    await jest.advanceTimersByTimeAsync(500);
    await Promise.all(asked);
    expect(went).toEqual([
      ['c1', 100],
      ['e1', 200],
      ['t1', 300],
      ['t2', 400],
    ]);
  });

  test('fifo: the same four go in the order they came', async () => {
    const admission = admissionOf(10, 'fifo');
    const went: string[] = [];
    const ask = (name: string, kind: MessageKind) => admission.ask(endpoint, { kind, reserved: true }).then((a) => a.go && went.push(name));
    await admission.ask(endpoint, { kind: 'telemetry' });
    const asked = [ask('t1', 'telemetry'), ask('t2', 'telemetry'), ask('e1', 'event'), ask('c1', 'command-response')];
    await jest.advanceTimersByTimeAsync(500);
    await Promise.all(asked);
    expect(went).toEqual(['t1', 't2', 'e1', 'c1']);
  });

  test('no room before the delivery expires: told without spending a cell or a turn', async () => {
    const rated = admissionOf(1);
    await rated.ask(endpoint, { kind: 'telemetry' });
    expect(at(await rated.ask(endpoint, { kind: 'command-response', notAfter: T0 + 500 }))).toBe(1_000);
    expect(at(await rated.ask(endpoint, { kind: 'command-response' }))).toBe(1_000);
    const bounded = new EndpointAdmission({ defaults: { maxInFlight: 1, rate: null } });
    expect((await bounded.ask(endpoint)).go).toBe(true);
    const late = bounded.ask(endpoint, { notAfter: T0 + 100 });
    await jest.advanceTimersByTimeAsync(100);
    // a turn after its expiry is told, not planned: the next asker gets the first turn
    expect(at(await late)).toBe(1_100);
    const next = bounded.ask(endpoint);
    await jest.advanceTimersByTimeAsync(500);
    expect(at(await next)).toBe(1_600);
  });

  test('a command response whose deadline passed before it asked ends expired, and the cell stays for the next', async () => {
    // the cell is free: before, it went out after its deadline
    const admission = admissionOf(1);
    const command = validateDelivery(
      {
        kind: 'command-response',
        tenant: 'acme',
        device: 'd',
        target: `https://${endpoint}/in`,
        payload: {},
        command: { requestId: 'r', deadline: T0 + 60_000 },
      },
      { now: T0 },
    );
    const now = T0 + 61_000;
    jest.setSystemTime(now);
    const passed = await passLimits(admission, command, { reservedAt: null, expiry: T0 + 60_000, now, holdUntil: () => null });
    expect(passed).toMatchObject({ go: false, expired: true, held: false });
    expect((await admission.ask(endpoint, { kind: 'telemetry' })).go).toBe(true);
  });

  test("a batch's request with no room before the earliest deadline it carries is not sent: each message goes on its own", async () => {
    const admission = admissionOf(1);
    await admission.ask(endpoint, { kind: 'telemetry' });
    expect(await admission.enter(endpoint, { kind: 'command-response', notAfter: T0 + 900 })).toEqual({ held: NO_ROOM });
  });
});
