import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLASSIFICATION_TABLE, FAILURE_TYPES, STABLE_CODE, classify, type Mqtt5Packet, type TransportOutcome } from '../../src/classify';
import { parseTable, renderTable, replaceTableBlock, tableBlock, type DocRow } from '../support/classification-doc';

const DOC = path.join(__dirname, '../../docs/error-classification.md');

describe('docs/error-classification.md', () => {
  test('shows exactly the table the classifier uses', () => {
    const doc = readFileSync(DOC, 'utf8');
    const rendered = renderTable(CLASSIFICATION_TABLE);
    if (process.env.UPDATE_DOCS) writeFileSync(DOC, replaceTableBlock(doc, rendered));
    else expect(tableBlock(doc)).toBe(rendered);
  });

  test('names the Temporal failure type of every class', () => {
    const doc = readFileSync(DOC, 'utf8');
    for (const [cls, type] of Object.entries(FAILURE_TYPES)) expect(doc).toContain(`| \`${cls}\` | \`${type}\` |`);
  });
});

// while the docs are being rewritten, the rows come from what is about to be written
const rows = parseTable(process.env.UPDATE_DOCS ? renderTable(CLASSIFICATION_TABLE) : tableBlock(readFileSync(DOC, 'utf8')));
const documented = new Set(rows.map((r) => r.code));

describe.each(rows.map((r) => [`${r.code}${r.when ? ` (${r.when})` : ''}`, r] as const))('row %s', (_, row) => {
  test.each(samplesOf(row).map((s) => [s.label, s] as const))('%s', (_label, sample) => {
    const c = classify(sample.outcome);
    expect(c.class).toBe(row.class);
    expect(c.retryable ? 'yes' : 'no').toBe(row.retryable);
    expect(c.code).toBe(sample.code);
    expect(c.code).toMatch(STABLE_CODE);
    const sentence = row.reason.replace(/\{(\w+)\}/g, (whole, name: string) => sample.vars[name] ?? whole);
    expect(sentence).not.toMatch(/\{\w+\}/);
    expect(c.reason).toBe(sample.note ? `${sentence} (${sample.note})` : sentence);
  });
});

test('every row is documented once', () => {
  const keys = rows.map((r) => `${r.code} ${r.when}`);
  expect(new Set(keys).size).toBe(keys.length);
  expect(rows).toHaveLength(CLASSIFICATION_TABLE.length);
});

interface Sample {
  label: string;
  outcome: TransportOutcome;
  /** The code classify must return for it. */
  code: string;
  vars: Record<string, string>;
  /** Server text the reason must quote after the sentence. */
  note?: string;
}

/** Outcomes that must land on this row: one per packet for MQTT 5, an undocumented member for a family. */
function samplesOf(row: DocRow): Sample[] {
  const code = row.code;
  const hex = (n: number) => `0x${n.toString(16).padStart(2, '0')}`;
  const firstFree = (from: number, to: number, codeOf: (n: number) => string) => {
    for (let n = from; n <= to; n++) if (!documented.has(codeOf(n))) return n;
    throw new Error(`no undocumented member left in ${code}`);
  };
  const packets = (when: string) => when.split(', ').map((p) => p.toLowerCase() as Mqtt5Packet);

  let m = /^http-(\d{3})$/.exec(code);
  if (m) {
    const status = Number(m[1]);
    const headers = { 'with a usable Retry-After': { 'retry-after': '7' }, 'without a usable Retry-After': {}, '': {} }[row.when];
    if (!headers) throw new Error(`no sample for ${code} ${row.when}`);
    const note = 'retry-after' in headers ? 'Retry-After: 7 s' : undefined;
    return [{ label: `HTTP ${status}`, outcome: { kind: 'http', status, headers }, code, vars: {}, ...(note && { note }) }];
  }
  m = /^http-([2-5])xx$/.exec(code);
  if (m) {
    const base = Number(m[1]) * 100;
    const status = firstFree(base, base + 99, (n) => `http-${n}`);
    return [{ label: `HTTP ${status}`, outcome: { kind: 'http', status }, code: `http-${status}`, vars: { status: String(status) } }];
  }
  m = /^mqtt-(0x[0-9a-f]{2})$/.exec(code);
  if (m) {
    const reasonCode = parseInt(m[1]!, 16);
    return packets(row.when).map((packet) => ({
      label: packet,
      outcome: { kind: 'mqtt5', packet, reasonCode },
      code,
      vars: { packet: packet.toUpperCase() },
    }));
  }
  if (code === 'mqtt-0x??') {
    const success = row.when.includes('below 0x80');
    const reasonCode = success ? firstFree(0x01, 0x7f, (n) => `mqtt-${hex(n)}`) : firstFree(0x80, 0xff, (n) => `mqtt-${hex(n)}`);
    return (success ? (['puback'] as const) : (['connack', 'puback', 'disconnect'] as const)).map((packet) => ({
      label: `${packet} ${hex(reasonCode)}`,
      outcome: { kind: 'mqtt5', packet, reasonCode },
      code: `mqtt-${hex(reasonCode)}`,
      vars: { packet: packet.toUpperCase(), code: hex(reasonCode) },
    }));
  }
  m = /^mqtt3-connack-(0x[0-9a-f]{2})$/.exec(code);
  if (m) return [{ label: 'CONNACK', outcome: { kind: 'mqtt3-connack', returnCode: parseInt(m[1]!, 16) }, code, vars: {} }];
  if (code === 'mqtt3-connack-0x??') {
    const returnCode = firstFree(0x01, 0xff, (n) => `mqtt3-connack-${hex(n)}`);
    return [
      {
        label: `CONNACK ${hex(returnCode)}`,
        outcome: { kind: 'mqtt3-connack', returnCode },
        code: `mqtt3-connack-${hex(returnCode)}`,
        vars: { code: hex(returnCode) },
      },
    ];
  }
  if (code === 'mqtt-sent') return [{ label: 'QoS 0 written', outcome: { kind: 'mqtt-sent' }, code, vars: {} }];
  if (code === 'mqtt-no-puback')
    return [{ label: 'silence', outcome: { kind: 'mqtt-no-puback', afterMs: 1500 }, code, vars: { timeout: '1500' } }];
  if (code === 'mqtt-closed') {
    return [
      { label: 'closed', outcome: { kind: 'mqtt-closed' }, code, vars: {} },
      // a success code anywhere but in a PUBACK ends the attempt without acknowledging the message
      {
        label: 'DISCONNECT 0x00',
        outcome: { kind: 'mqtt5', packet: 'disconnect', reasonCode: 0 },
        code,
        vars: {},
        note: 'DISCONNECT 0x00',
      },
      { label: 'CONNACK 0x00', outcome: { kind: 'mqtt5', packet: 'connack', reasonCode: 0 }, code, vars: {}, note: 'CONNACK 0x00' },
    ];
  }
  m = /^(net|tls)-(.+)$/.exec(code);
  if (m) {
    const kind = m[1] === 'net' ? 'network' : 'tls';
    // a family gets a real code that has no row of its own
    const own = m[2] === '*' ? (kind === 'network' ? 'ECONNABORTED' : 'CERT_REVOKED') : m[2]!;
    if (m[2] === '*' && documented.has(`${m[1]}-${own}`)) throw new Error(`${own} has a row of its own`);
    return [{ label: own, outcome: { kind, code: own }, code: `${m[1]}-${own}`, vars: { code: own } }];
  }
  if (code === 'timeout') return [{ label: 'silence', outcome: { kind: 'timeout', afterMs: 2500 }, code, vars: { timeout: '2500' } }];
  if (code === 'invalid-target')
    return [{ label: 'bad URL', outcome: { kind: 'invalid-target', message: 'Invalid URL' }, code, vars: {}, note: 'Invalid URL' }];
  if (code === 'ssrf-blocked') {
    const vars = { address: '127.0.0.1', range: 'loopback', description: 'a loopback address' };
    return [
      { label: 'IP literal', outcome: { kind: 'blocked-address', host: '127.0.0.1', ...vars }, code, vars },
      {
        label: 'DNS name',
        outcome: { kind: 'blocked-address', host: 'rebind.example', ...vars },
        code,
        vars,
        note: 'rebind.example resolves to it',
      },
    ];
  }
  if (code === 'secret-not-bound') {
    const vars = {
      secret: 'MQTT credential "hub-acme"',
      target: 'mqtt://attacker.example:1883',
      hint: 'If it is trusted, add it to "brokers" in REDELIVER_MQTT_CREDENTIALS_HUB_ACME',
    };
    return [{ label: 'another broker', outcome: { kind: 'unbound-secret', ...vars }, code, vars }];
  }
  if (code === 'secret-not-for-tenant') {
    const vars = {
      secret: 'signing secret "acme-hooks"',
      tenant: 'globex',
      hint: 'If tenant "globex" may use it, add it to "tenants" in REDELIVER_SIGNING_SECRETS_ACME_HOOKS',
    };
    return [{ label: "another tenant's secret", outcome: { kind: 'foreign-secret', ...vars }, code, vars }];
  }
  throw new Error(`no sample outcome for ${code}: teach samplesOf this row`);
}
