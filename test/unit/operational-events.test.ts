import { ConfigError, workerSettingsFromEnv } from '../../src/config';
import { operatorAddressProblems } from '../../src/config/operator-events';
import { createWorker } from '../../src/worker';
import { DEAD_LETTER_WINDOW_MS, EndpointEvents, envelopeOf, type DeadLetterTally } from '../../src/endpoints/operational-events';
import type { EndpointHealth } from '../../src/endpoints/health';

// Operational events (docs/endpoint-health.md): which ones an endpoint's workflow decides, their ids and
// bodies, the dead letters told in aggregate, and a worker refused at start without a signing secret.

const T0 = Date.parse('2026-11-23T12:00:00Z');
const health = (state: EndpointHealth['state'], extra: Partial<EndpointHealth> = {}): EndpointHealth => ({
  state,
  failureRate: state === 'failing' ? 1 : 0,
  attemptsLastMinute: 4,
  failingSince: state === 'failing' ? T0 : null,
  recoveredAt: null,
  lastAttemptAt: T0,
  ...extra,
});
const letters = (count: number, from: number, outcome: 'rejected' | 'expired' = 'rejected'): DeadLetterTally => ({
  count,
  outcomes: { [outcome]: count },
  first: { deliveryId: `d-${from}`, at: from },
  last: { deliveryId: `d-${from + count - 1}`, at: from + count - 1 },
});

describe('endpoint events', () => {
  test('failing, then recovered: one event each, with stable ids in order; recovering to healthy says nothing', () => {
    const events = new EndpointEvents('ingest.example.com:8443');
    events.health('healthy', health('failing'), 'http-503');
    events.health('failing', health('recovering', { recoveredAt: T0 + 20_000 }), null);
    events.health('recovering', health('healthy'), null);
    const sent = events.take(T0 + 21_000);
    expect(sent.map((e) => e.id)).toEqual([
      `endpoint.failing.ingest.example.com:8443.1.${T0}`,
      `endpoint.recovered.ingest.example.com:8443.2.${T0 + 20_000}`,
    ]);
    expect(envelopeOf(sent[0]!)).toEqual({
      type: 'endpoint.failing',
      timestamp: '2026-11-23T12:00:00.000Z',
      data: {
        endpoint: 'ingest.example.com:8443',
        state: 'failing',
        since: '2026-11-23T12:00:00.000Z',
        reason: 'http-503; 100% of 4 attempts in the last minute failed',
        failureRate: 1,
        attemptsLastMinute: 4,
      },
    });
    expect(sent[1]!.data).toMatchObject({ state: 'recovering', since: '2026-11-23T12:00:20.000Z' });
    expect(events.take(T0 + 22_000)).toEqual([]);
  });

  test('the sequence goes on in the next run: a continued workflow cannot reuse an id', () => {
    const first = new EndpointEvents('e');
    first.disabled({ state: 'disabled', reason: 'retired', since: T0, by: 'operator' });
    expect(first.take(T0)[0]).toMatchObject({ id: `endpoint.disabled.e.1.${T0}`, data: { reason: 'retired', by: 'operator' } });
    const next = new EndpointEvents('e', first.carried());
    next.health('healthy', health('failing'), null);
    expect(next.take(T0)[0]!.id).toBe(`endpoint.failing.e.2.${T0}`);
  });

  test('a storm of dead letters: the first told at once, the rest together once the window has passed; the counts add up', () => {
    const events = new EndpointEvents('e');
    events.deadLettered(letters(3, T0));
    const first = events.take(T0 + 1_000);
    expect(first).toHaveLength(1);
    expect(first[0]!.data).toMatchObject({ count: 3, outcomes: { rejected: 3 }, firstDeliveryId: `d-${T0}` });
    for (let s = 1; s <= 20; s++) events.deadLettered(letters(50, T0 + s * 1_000, s % 2 ? 'rejected' : 'expired'));
    expect(events.take(T0 + 21_000)).toEqual([]);
    expect(events.deadLettersDueAt).toBe(T0 + 1_000 + DEAD_LETTER_WINDOW_MS);
    const rest = events.take(T0 + 1_000 + DEAD_LETTER_WINDOW_MS);
    expect(rest).toHaveLength(1);
    expect(rest[0]!.data).toMatchObject({
      count: 1_000,
      outcomes: { rejected: 500, expired: 500 },
      firstDeliveryId: `d-${T0 + 1_000}`,
      lastDeliveryId: `d-${T0 + 20_000 + 49}`,
      reason: '500 rejected, 500 expired',
    });
    expect(events.deadLettersDueAt).toBeNull();
  });

  test('an endpoint name that cannot be part of a message id is made one', () => {
    const events = new EndpointEvents('bad host/with+chars#' + 'x'.repeat(200));
    events.health('healthy', health('failing'), null);
    const id = events.take(T0)[0]!.id;
    expect(id).toMatch(/^[!-~]+$/);
    expect(id).not.toMatch(/[/+#]/);
    expect(id.length).toBeLessThanOrEqual(160);
  });
});

describe('operator URLs', () => {
  // operational events are deliveries of the reserved tenant `redeliver`: the operator's secret is for it
  const secret = {
    secrets: [`whsec_${Buffer.alloc(32, 7).toString('base64')}`],
    endpoints: ['https://ops.example.com'],
    tenants: ['redeliver'],
  };
  const problems = (env: Record<string, string>) => {
    try {
      workerSettingsFromEnv({ HOME: '/nonexistent', ...env });
    } catch (err) {
      if (err instanceof ConfigError) return err.problems.map((p) => `${p.variable}: ${p.message}`);
      throw err;
    }
    return [];
  };

  test('without a signing secret the worker refuses to start, naming the setting', () => {
    expect(problems({ REDELIVER_OPERATOR_URLS: 'https://ops.example.com/hooks' })).toEqual([
      expect.stringMatching(/^REDELIVER_OPERATOR_SIGNING_SECRET: must name the signing secret operational events are signed with/),
    ]);
  });

  test('a secret that is unknown, or not bound to an operator URL, is refused; a bad URL too', () => {
    expect(problems({ REDELIVER_OPERATOR_URLS: 'https://ops.example.com/hooks', REDELIVER_OPERATOR_SIGNING_SECRET: 'ops' })).toEqual([
      expect.stringContaining(
        'REDELIVER_OPERATOR_SIGNING_SECRET: this worker has no signing secret named "ops" (set REDELIVER_SIGNING_SECRETS_OPS',
      ),
    ]);
    expect(
      problems({
        REDELIVER_OPERATOR_URLS: 'https://other.example.com/hooks, ftp://x',
        REDELIVER_OPERATOR_SIGNING_SECRET: 'ops',
        REDELIVER_SIGNING_SECRETS_OPS: JSON.stringify(secret),
      }),
    ).toEqual([
      'REDELIVER_OPERATOR_URLS: "ftp://x" is not an http(s) URL',
      expect.stringMatching(/^REDELIVER_OPERATOR_SIGNING_SECRET: signing secret "ops" is not bound to https:\/\/other\.example\.com/),
    ]);
  });

  test('a secret not for the tenant `redeliver` stops the worker, naming the variable to edit', () => {
    expect(
      problems({
        REDELIVER_OPERATOR_URLS: 'https://ops.example.com/hooks',
        REDELIVER_OPERATOR_SIGNING_SECRET: 'ops',
        REDELIVER_SIGNING_SECRETS_OPS: JSON.stringify({ ...secret, tenants: ['acme'] }),
      }),
    ).toEqual([
      'REDELIVER_OPERATOR_SIGNING_SECRET: signing secret "ops" is not for tenant "redeliver", whose deliveries operational events are. ' +
        'If tenant "redeliver" may use it, add it to "tenants" in REDELIVER_SIGNING_SECRETS_OPS or the file named by REDELIVER_SIGNING_SECRETS_FILE',
    ]);
    const everyTenant = { ...secret, tenants: ['*'] };
    expect(
      problems({
        REDELIVER_OPERATOR_URLS: 'https://ops.example.com/hooks',
        REDELIVER_OPERATOR_SIGNING_SECRET: 'ops',
        REDELIVER_SIGNING_SECRETS_OPS: JSON.stringify(everyTenant),
      }),
    ).toEqual([]);
  });

  test('an operator URL the SSRF guard refuses stops the worker at start, naming the variable; the allow-list opens it', async () => {
    const env = {
      HOME: '/nonexistent',
      REDELIVER_OPERATOR_URLS: 'http://169.254.169.254/latest/meta-data, http://localhost:9/ops',
      REDELIVER_OPERATOR_SIGNING_SECRET: 'ops',
      REDELIVER_SIGNING_SECRETS_OPS: JSON.stringify({ ...secret, endpoints: ['http://169.254.169.254', 'http://localhost:9'] }),
    };
    // refused before it connects to anything: there is no Temporal server here
    const refused = await createWorker({ env }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).problems.map((p) => `${p.variable}: ${p.message}`)).toEqual([
      expect.stringMatching(/^REDELIVER_OPERATOR_URLS: "http:\/\/169\.254\.169\.254\/latest\/meta-data": .*cloud metadata service/),
      expect.stringMatching(/^REDELIVER_OPERATOR_URLS: "http:\/\/localhost:9\/ops": localhost resolves to .*loopback/),
    ]);
    // the allow-list opens a range: loopback for a test's receiver, say, and the metadata service only by its own name
    const loopback = workerSettingsFromEnv({ ...env, REDELIVER_ALLOW_ADDRESSES: 'loopback, link-local' });
    const left = await operatorAddressProblems(loopback.operatorEvents!, loopback.allowAddresses, 'REDELIVER_OPERATOR_URLS');
    expect(left.map((p) => p.message)).toEqual([expect.stringContaining('169.254.169.254')]);
    const open = workerSettingsFromEnv({ ...env, REDELIVER_ALLOW_ADDRESSES: 'loopback, metadata' });
    expect(await operatorAddressProblems(open.operatorEvents!, open.allowAddresses)).toEqual([]);
    // a name is checked by what it resolves to
    const named = { urls: ['https://ops.example.com/hooks'], signing: 'ops' };
    const guard = workerSettingsFromEnv({ HOME: '/nonexistent' }).allowAddresses;
    expect(await operatorAddressProblems(named, guard, 'x', async () => ['93.184.215.14'])).toEqual([]);
    expect(await operatorAddressProblems(named, guard, 'x', async () => ['93.184.215.14', '10.0.0.7'])).toEqual([
      { variable: 'x', message: expect.stringContaining('ops.example.com resolves to 10.0.0.7: a private network address') },
    ]);
  });

  test('URLs with a secret bound to them are what the worker sends events to', () => {
    const settings = workerSettingsFromEnv({
      HOME: '/nonexistent',
      REDELIVER_OPERATOR_URLS: 'https://ops.example.com/a,https://ops.example.com/b',
      REDELIVER_OPERATOR_SIGNING_SECRET: 'ops',
      REDELIVER_SIGNING_SECRETS_OPS: JSON.stringify(secret),
    });
    expect(settings.operatorEvents).toEqual({ urls: ['https://ops.example.com/a', 'https://ops.example.com/b'], signing: 'ops' });
    expect(workerSettingsFromEnv({ HOME: '/nonexistent' }).operatorEvents).toBeNull();
  });
});
