import { startTcpListener, type TcpListener } from './tcp-listener';

/**
 * Acme's broker as a listener that counts connections, with acme's MQTT credential `hub-acme` bound to it
 * and to tenant `acme` alone, around each test of the describe that calls it: another tenant naming the
 * credential must reach it never (issue 31). Returns the listener of the running test.
 */
export function acmeHubPerTest(): () => TcpListener {
  let hub: TcpListener;
  beforeEach(async () => {
    hub = (await startTcpListener('127.0.0.1'))!;
    process.env.REDELIVER_MQTT_CREDENTIALS_HUB_ACME = JSON.stringify({
      username: 'acme',
      password: 'acme-secret',
      brokers: [hub.url('mqtt')],
      tenants: ['acme'],
    });
  });
  afterEach(async () => {
    delete process.env.REDELIVER_MQTT_CREDENTIALS_HUB_ACME;
    await hub.close();
  });
  return () => hub;
}
