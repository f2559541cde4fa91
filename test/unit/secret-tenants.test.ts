import { randomBytes } from 'node:crypto';
import { InvalidInputError } from '../../src/errors';
import { secretTenantsFromEnvironment } from '../../src/transports/secret-tenants';
import { validateDelivery, validateDeliveries } from '../../src/validation/delivery';
import { validateSubscription } from '../../src/validation/subscription';

// Submit refuses a delivery or subscription that names another tenant's secret, where it can see the
// worker's configuration (the HTTP API server, the CLI): the field named, nothing started.

const key = `whsec_${randomBytes(32).toString('base64')}`;
const env = {
  REDELIVER_SIGNING_SECRETS_ACME_HOOKS: JSON.stringify({ secrets: [key], endpoints: ['https://hooks.acme.example'], tenants: ['acme'] }),
  REDELIVER_SIGNING_SECRETS_SHARED: JSON.stringify({ secrets: [key], endpoints: ['https://hooks.acme.example'], tenants: ['*'] }),
  REDELIVER_MQTT_CREDENTIALS_HUB_ACME: JSON.stringify({
    username: 'acme',
    password: 'hunter2',
    brokers: ['mqtts://hub.example.com'],
    tenants: ['acme'],
  }),
};
const secretTenants = secretTenantsFromEnvironment(env);

const delivery = (tenant: string, target: unknown) => ({ kind: 'event', tenant, device: 'valve-7', messageId: 'm-1', target, payload: {} });
const problemsOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidInputError) return err.problems;
    throw err;
  }
  return [];
};

test("a globex delivery naming acme's signing secret or MQTT credential is refused, naming the field; acme's are accepted", () => {
  const signed = { url: 'https://hooks.acme.example/in', signing: 'acme-hooks' };
  const published = { url: 'mqtts://hub.example.com', credential: 'hub-acme', topic: 'command/acme/valve-7/x' };
  const message = (what: string, name: string) =>
    `names the ${what} "${name}", which is not for tenant "globex": a secret of the worker serves only the tenants in its "tenants" (docs/mqtt.md, "Secrets are bound to tenants")`;
  expect(problemsOf(() => validateDelivery(delivery('globex', signed), { secretTenants }))).toEqual([
    { field: 'target.signing', message: message('signing secret', 'acme-hooks') },
  ]);
  expect(problemsOf(() => validateDelivery(delivery('globex', published), { secretTenants }))).toEqual([
    { field: 'target.credential', message: message('MQTT credential', 'hub-acme') },
  ]);
  // in a bulk submit too, each input named
  expect(problemsOf(() => validateDeliveries([delivery('acme', signed), delivery('globex', signed)], { secretTenants }))).toEqual([
    { field: '[1].target.signing', message: message('signing secret', 'acme-hooks') },
  ]);
  expect(validateDelivery(delivery('acme', signed), { secretTenants }).target).toMatchObject({ signing: 'acme-hooks' });
  expect(validateDelivery(delivery('acme', published), { secretTenants }).target).toMatchObject({ credential: 'hub-acme' });
});

test('"*" allows every tenant; a secret this side does not know, or has broken, is left to the worker', () => {
  expect(validateDelivery(delivery('globex', { url: 'https://hooks.acme.example/in', signing: 'shared' }), { secretTenants }).tenant).toBe(
    'globex',
  );
  expect(validateDelivery(delivery('globex', { url: 'https://x.example/in', signing: 'unknown' }), { secretTenants }).tenant).toBe(
    'globex',
  );
  const broken = secretTenantsFromEnvironment({ REDELIVER_SIGNING_SECRETS_ACME_HOOKS: '{"secrets": []}' });
  expect(broken('signing', 'acme-hooks')).toBeUndefined();
  // without a lookup (a producer's own process, by choice) nothing is checked here: the worker checks
  expect(validateDelivery(delivery('globex', { url: 'https://hooks.acme.example/in', signing: 'acme-hooks' })).tenant).toBe('globex');
});

test("a globex command subscription naming acme's credential is refused, naming broker.credential (and a response target's)", () => {
  const subscription = (tenant: string, extra: object = {}) => ({
    tenant,
    device: 'valve-7',
    broker: { url: 'mqtts://hub.example.com', credential: 'hub-acme' },
    callback: 'https://app.example.com/commands',
    ...extra,
  });
  expect(problemsOf(() => validateSubscription(subscription('globex'), { secretTenants })).map((p) => p.field)).toEqual([
    'broker.credential',
  ]);
  expect(validateSubscription(subscription('acme'), { secretTenants }).broker.credential).toBe('hub-acme');
  const ownBroker = { broker: 'mqtts://hub.example.com', response: { target: { url: 'mqtts://hub.example.com', credential: 'hub-acme' } } };
  expect(problemsOf(() => validateSubscription(subscription('globex', ownBroker), { secretTenants })).map((p) => p.field)).toEqual([
    'response.target.credential',
  ]);
});
