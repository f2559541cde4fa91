import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { freePort } from './ports';

/** Debian's mosquitto package puts the broker in /usr/sbin; `npm test`'s pretest installs it when missing. */
const MOSQUITTO = ['/usr/sbin/mosquitto', '/usr/bin/mosquitto'].find((p) => existsSync(p)) ?? 'mosquitto';
const MOSQUITTO_PASSWD = ['/usr/bin/mosquitto_passwd', '/usr/sbin/mosquitto_passwd'].find((p) => existsSync(p)) ?? 'mosquitto_passwd';
const TLS_DIR = path.join(__dirname, '../fixtures/tls');

export interface BrokerUser {
  username: string;
  password: string;
  /** ACL lines for this user, as mosquitto writes them: `readwrite telemetry/#`, `read command/+/+/req/#`. */
  acl: string[];
}

export interface MosquittoOptions {
  users: BrokerUser[];
  /** Also listen with TLS (the self-signed certificate of test/fixtures/tls) on a second port. */
  tls?: boolean;
  /** More lines of mosquitto.conf, e.g. `max_queued_messages 0` (Mosquitto drops a session's messages past 1,000 queued). */
  settings?: string[];
}

/**
 * A real Mosquitto broker on loopback, on ports chosen by the test, with a generated config: password
 * file, ACL file, no anonymous access, no persistence. MQTT 3.1.1 and 5 on every listener.
 */
export interface Mosquitto {
  port: number;
  /** `mqtt://127.0.0.1:<port>` */
  url: string;
  /** `mqtts://localhost:<tlsPort>` when started with `tls` (the certificate names localhost). */
  tlsUrl: string | undefined;
  dir: string;
  /** The broker's log so far (errors, warnings, notices): for failure messages. */
  log(): string;
  running(): boolean;
  /** SIGTERM, then wait for the process to end. */
  stop(): Promise<void>;
  /** SIGKILL: the broker dies without a goodbye, as in a crash; resolves once the process has ended. */
  kill(): Promise<void>;
  /** Start again on the same ports with the same config (after stop or kill); resolves once it listens. */
  start(): Promise<void>;
  /** SIGSTOP / SIGCONT: the broker keeps its sockets open but answers nothing (a hung broker). */
  freeze(): void;
  thaw(): void;
}

const live = new Set<ChildProcess>();
// a test that fails before its afterAll must not leave brokers behind
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export async function startMosquitto(options: MosquittoOptions): Promise<Mosquitto> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-mosquitto-'));
  const port = await freePort();
  const tlsPort = options.tls ? await freePort() : undefined;

  const passwd = path.join(dir, 'passwd');
  writeFileSync(passwd, '', { mode: 0o600 });
  for (const user of options.users) execFileSync(MOSQUITTO_PASSWD, ['-b', passwd, user.username, user.password], { stdio: 'pipe' });
  const acl = path.join(dir, 'acl');
  writeFileSync(acl, options.users.map((u) => [`user ${u.username}`, ...u.acl.map((line) => `topic ${line}`), ''].join('\n')).join('\n'), {
    mode: 0o600,
  });

  const conf = path.join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      // as root, mosquitto would switch to its own user, which cannot read this private directory
      `user ${userInfo().username}`,
      'per_listener_settings false',
      'allow_anonymous false',
      `password_file ${passwd}`,
      `acl_file ${acl}`,
      'persistence false',
      'log_dest stderr',
      ...['error', 'warning', 'notice', 'information'].map((t) => `log_type ${t}`),
      'log_timestamp_format %H:%M:%S',
      ...(options.settings ?? []),
      `listener ${port} 127.0.0.1`,
      ...(tlsPort
        ? [
            `listener ${tlsPort} 127.0.0.1`,
            `certfile ${path.join(TLS_DIR, 'localhost.crt')}`,
            `keyfile ${path.join(TLS_DIR, 'localhost.key')}`,
          ]
        : []),
      '',
    ].join('\n'),
  );

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let log = '';

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const proc = spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
      child = proc;
      live.add(proc);
      let ready = false;
      exited = new Promise((done) =>
        proc.once('exit', (code, signal) => {
          live.delete(proc);
          if (child === proc) child = undefined;
          if (!ready) reject(new Error(`mosquitto exited (${signal ?? code}) before it listened:\n${log}`));
          done();
        }),
      );
      proc.once('error', reject);
      let pending = '';
      proc.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        pending += chunk.toString();
        // "mosquitto version 2.0.11 running" comes once every listener is open
        if (!ready && / running\b/.test(pending)) {
          ready = true;
          resolve();
        }
      });
    });

  await start();
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    tlsUrl: tlsPort ? `mqtts://localhost:${tlsPort}` : undefined,
    dir,
    log: () => log,
    running: () => child !== undefined,
    async stop() {
      child?.kill('SIGTERM');
      child?.kill('SIGCONT'); // a frozen broker handles its SIGTERM only once it runs again
      await exited;
    },
    async kill() {
      child?.kill('SIGKILL');
      await exited;
    },
    async start() {
      if (child) throw new Error('mosquitto is already running');
      await start();
    },
    freeze() {
      child?.kill('SIGSTOP');
    },
    thaw() {
      child?.kill('SIGCONT');
    },
  };
}

/** A message a watcher saw: topic, payload as text, and its MQTT 5 properties. */
export interface Seen {
  topic: string;
  payload: string;
  qos: number;
  userProperties: Record<string, string | string[]>;
  contentType: string | undefined;
}

export interface Watcher {
  seen: Seen[];
  client: MqttClient;
  close(): Promise<void>;
}

/**
 * An MQTT 5 client of the test's own (a receiver, or a backend sending commands), connected and, with a
 * topic filter, subscribed at QoS 1 before this resolves.
 */
export async function watch(url: string, user: { username: string; password: string }, filter?: string): Promise<Watcher> {
  const client = await mqtt.connectAsync(url, {
    protocolVersion: 5,
    username: user.username,
    password: user.password,
    reconnectPeriod: 0,
    clientId: `watcher${Math.random().toString(16).slice(2, 12)}`,
  });
  const seen: Seen[] = [];
  client.on('message', (topic, payload, packet) => {
    seen.push({
      topic,
      payload: payload.toString('utf8'),
      qos: packet.qos,
      userProperties: (packet.properties?.userProperties ?? {}) as Record<string, string | string[]>,
      contentType: packet.properties?.contentType,
    });
  });
  if (filter) {
    const granted = await client.subscribeAsync(filter, { qos: 1 });
    if ((granted[0]?.qos ?? 0x80) >= 0x80) throw new Error(`the watcher may not subscribe to ${filter}`);
  }
  return { seen, client, close: () => client.endAsync(true) };
}
