import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import draft7 from 'ajv/dist/refs/json-schema-draft-07.json';
import { parse } from 'yaml';
import { buildProgram } from '../../../src/cli/main';
import { DEPLOY_DIR, HISTORY_SHARDS } from '../../../src/cluster/cluster';
import { TEMPORAL_SERVER_VERSION, TEMPORAL_UI_VERSION } from '../../../src/cluster/go-build';
import { ENVIRONMENT, isKnownVariable, workerSettingsFromEnv } from '../../../src/config';
import { TEMPORAL_CLI_VERSION } from '../../../src/dev/temporal-cli';
import { SEARCH_ATTRIBUTES } from '../../../src/contract';

// No Docker engine runs here: what can be checked without one is checked. docker-compose.yml against the
// Compose Specification's JSON schema (as `docker compose` validates it, after interpolation), the images
// it pins, and the worker image's Dockerfile against the code: its entry point, its commands, the
// environment it sets and the environment compose gives it, read by src/config as the worker reads it.

const ROOT = path.join(__dirname, '../../..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** Compose's interpolation: `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`, `$$`. */
function interpolate(value: unknown, env: Record<string, string>): unknown {
  if (typeof value === 'string') {
    return value.replace(
      /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
      (whole, name?: string, colon?: string, op?: string, arg?: string, bare?: string) => {
        if (whole === '$$') return '$';
        if (bare) return env[bare] ?? '';
        const v = env[name!];
        const unset = v === undefined || (colon === ':' && v === '');
        if (!op) return v ?? '';
        if (op === '-') return unset ? arg! : v!;
        if (unset) throw new Error(`required variable ${name} is missing a value: ${arg}`);
        return v!;
      },
    );
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  return value;
}

type Service = {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  container_name?: string;
  stop_grace_period?: string;
  volumes?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
};
interface ComposeFile {
  services: Record<string, Service>;
}

const KEYS = 'k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=';
const raw = parse(read('docker-compose.yml')) as ComposeFile;
const TOKEN = 'test-codec-token-0123456789';
const compose = interpolate(raw, { REDELIVER_ENCRYPTION_KEYS: KEYS, REDELIVER_CODEC_TOKEN: TOKEN }) as ComposeFile;
const worker = compose.services.worker!;

describe('docker-compose.yml', () => {
  test('is valid by the Compose Specification schema (test/fixtures/compose/compose-spec.json)', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addMetaSchema(draft7, 'https://json-schema.org/draft-07/schema');
    const validate = ajv.compile(JSON.parse(read('test/fixtures/compose/compose-spec.json')) as object);
    const ok = validate(compose);
    expect(ok ? [] : validate.errors).toEqual([]);
    // and the schema does refuse what compose refuses
    expect(validate({ services: { worker: { ...worker, restart_policy: 'always' } } })).toBe(false);
  });

  test('will not start without encryption keys: message bodies are never stored in plain text', () => {
    expect(() => interpolate(raw, { REDELIVER_CODEC_TOKEN: TOKEN })).toThrow(
      'required variable REDELIVER_ENCRYPTION_KEYS is missing a value',
    );
  });

  test('will not start without a codec token: the codec server decrypts only for callers that hold it', () => {
    expect(() => interpolate(raw, { REDELIVER_ENCRYPTION_KEYS: KEYS })).toThrow(
      'required variable REDELIVER_CODEC_TOKEN is missing a value',
    );
  });

  test('pins official images to versions that go with the Temporal CLI the tests run (Temporal Server 1.32, UI 2.54)', () => {
    const images = Object.fromEntries(
      Object.entries(compose.services)
        .filter(([, s]) => !s.build)
        .map(([name, s]) => [name, s.image!]),
    );
    expect(images).toEqual({
      postgresql: 'postgres:16.13',
      'temporal-schema': 'temporalio/admin-tools:1.32.0',
      temporal: 'temporalio/server:1.32.0',
      'temporal-setup': 'temporalio/admin-tools:1.32.0',
      'temporal-ui': 'temporalio/ui:2.54.1',
    });
    expect(TEMPORAL_CLI_VERSION).toBe('1.9.1'); // its dev server is Temporal Server 1.32.0 with UI 2.54.1
    for (const image of Object.values(images)) expect(image).toMatch(/^[a-z/-]+:\d+\.\d+(\.\d+)?$/);
  });

  test('brings up Temporal on PostgreSQL in order: schema, server, namespace and search attributes, then the workers', () => {
    expect(compose.services.temporal!.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql' });
    expect(compose.services.temporal!.depends_on).toEqual({ 'temporal-schema': { condition: 'service_completed_successfully' } });
    expect(compose.services['temporal-schema']!.depends_on).toEqual({ postgresql: { condition: 'service_healthy' } });
    expect(compose.services['temporal-setup']!.depends_on).toEqual({ temporal: { condition: 'service_healthy' } });
    expect(worker.depends_on).toEqual({ 'temporal-setup': { condition: 'service_completed_successfully' } });
    for (const service of Object.values(compose.services)) {
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0]!;
        if (source.startsWith('./')) expect(existsSync(path.join(ROOT, source))).toBe(true);
      }
      const script = service.entrypoint?.[1]?.replace('/deploy/', 'deploy/temporal/');
      if (script) expect(existsSync(path.join(ROOT, script))).toBe(true);
    }
  });

  test('runs Temporal from the files `redeliver cluster up` runs, at the versions it builds', () => {
    expect(DEPLOY_DIR).toBe(path.join(ROOT, 'deploy', 'temporal'));
    const temporal = compose.services.temporal!;
    const mount = (service: Service) => {
      const volume = (service.volumes ?? []).find((v) => v.startsWith('./deploy/temporal:'));
      expect(volume).toBeDefined();
      return volume!.split(':')[1]!;
    };
    expect(temporal.environment).toMatchObject({
      TEMPORAL_SERVER_CONFIG_FILE_PATH: `${mount(temporal)}/config.yaml`,
      DYNAMIC_CONFIG_FILE_PATH: `${mount(temporal)}/dynamicconfig.yaml`,
    });
    for (const [name, script] of [
      ['temporal-schema', 'setup-postgres.sh'],
      ['temporal-setup', 'setup-namespace.sh'],
    ] as const)
      expect(compose.services[name]!.entrypoint).toEqual(['/bin/sh', `${mount(compose.services[name]!)}/${script}`]);
    expect(temporal.image).toBe(`temporalio/server:${TEMPORAL_SERVER_VERSION}`);
    expect(compose.services['temporal-schema']!.image).toBe(`temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
    expect(compose.services['temporal-ui']!.image).toBe(`temporalio/ui:${TEMPORAL_UI_VERSION}`);
    expect(Number(temporal.environment!.NUM_HISTORY_SHARDS)).toBe(HISTORY_SHARDS);
  });

  test("creates exactly the project's search attributes, with their types", () => {
    const listed = compose.services['temporal-setup']!.environment!.REDELIVER_SEARCH_ATTRIBUTES!.split(/\s+/);
    const types: Record<string, string> = {
      KEYWORD: 'Keyword',
      INT: 'Int',
      TEXT: 'Text',
      DOUBLE: 'Double',
      BOOL: 'Bool',
      DATETIME: 'Datetime',
      KEYWORD_LIST: 'KeywordList',
    };
    expect(listed).toEqual(SEARCH_ATTRIBUTES.map((key) => `${key.name}=${types[key.type]}`));
    expect(read('deploy/temporal/setup-namespace.sh')).toContain('temporal operator search-attribute create');
  });

  test('the worker scales with --scale worker=N: no fixed name, no published port, built from the Dockerfile', () => {
    expect(worker.build).toBe('.');
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports).toBeUndefined();
    expect(worker.command).toEqual(['worker']);
  });

  test("the worker's environment is what src/config reads, and is valid", () => {
    const env = worker.environment!;
    expect(Object.keys(env).filter((name) => !isKnownVariable(name))).toEqual([]);
    const { REDELIVER_WORKFLOW_BUNDLE: bundle, ...rest } = env;
    const settings = workerSettingsFromEnv({ ...rest, HOME: '/nonexistent' });
    expect(settings).toMatchObject({
      taskQueue: 'redeliver',
      temporal: { connectionOptions: { address: 'temporal:7233' }, namespace: 'default' },
    });
    expect(settings.encryptionKeys?.current.id).toBe('k1');
    // with keys, the bundle it names is the encrypted one the image builds (src/worker.ts refuses the plain one)
    expect(bundle).toBe('/app/lib/workflow-bundle-encrypted.js');
    // Docker waits longer than the worker drains
    expect(seconds(worker.stop_grace_period!)).toBeGreaterThan(settings.shutdownGraceMs / 1000);
  });

  test("the codec server's command, environment and health check fit src/cli/codec-server.ts", () => {
    const codec = compose.services['codec-server']!;
    const [name, ...args] = codec.command!;
    const command = buildProgram().commands.find((c) => c.name() === name);
    expect(command).toBeDefined();
    const flags = args.filter((a) => a.startsWith('--'));
    expect(flags.filter((f) => !command!.options.some((o) => o.long === f))).toEqual([]);
    const port = args[args.indexOf('--port') + 1];
    expect(codec.healthcheck!.test.join(' ')).toContain(`127.0.0.1:${port}/health`);
    expect(codec.ports).toEqual([`127.0.0.1:${port}:${port}`]);
    for (const variable of Object.keys(codec.environment!))
      expect(ENVIRONMENT.find((v) => v.name === variable)?.readBy).toContain('codec-server');
    // the UI calls it at the address the browser knows, from the origin the codec server allows
    const ui = compose.services['temporal-ui']!.environment!;
    expect(ui.TEMPORAL_CODEC_ENDPOINT).toBe(`http://localhost:${port}/${TOKEN}`);
    expect(codec.environment!.REDELIVER_CODEC_TOKEN).toBe(TOKEN);
    expect(codec.environment!.REDELIVER_CODEC_CORS_ORIGINS).toBe(ui.TEMPORAL_CORS_ORIGINS);
  });
});

/** The Dockerfile's instructions by stage: enough to check it against the code without a Docker engine. */
const dockerfile = (() => {
  const text = read('Dockerfile').replace(/\\\n\s*/g, ' ');
  const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const stages: { from: string; instructions: [string, string][] }[] = [];
  for (const line of lines) {
    const [, op = '', rest = ''] = /^(\w+)\s+(.*)$/.exec(line.trim()) ?? [];
    if (op === 'FROM') stages.push({ from: rest, instructions: [] });
    else stages.at(-1)?.instructions.push([op, rest]);
  }
  const final = stages.at(-1)!;
  const get = (op: string) => final.instructions.filter(([o]) => o === op).map(([, r]) => r);
  const env = Object.fromEntries(get('ENV').flatMap((r) => [...r.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])));
  return { stages, final, get, env, text };
})();

describe('Dockerfile', () => {
  test('is multi-stage: built with the dev dependencies, run from a slim image on Node 20 without them', () => {
    expect(dockerfile.stages).toHaveLength(2);
    expect(dockerfile.stages[0]!.from).toBe('${NODE_IMAGE} AS build');
    expect(dockerfile.text).toMatch(/ARG NODE_IMAGE=node:20\.\d+\.\d+-bookworm-slim/);
    const build = dockerfile.stages[0]!.instructions.filter(([op]) => op === 'RUN')
      .map(([, r]) => r)
      .join(' && ');
    expect(build).toContain('npm run build');
    expect(build).toContain('npm prune --omit=dev');
    expect(dockerfile.get('COPY').every((c) => c.startsWith('--from=build'))).toBe(true);
  });

  test('pre-builds the workflow bundles with the `bundle` command, and points the worker at the plain one', () => {
    const build = dockerfile.stages[0]!.instructions.map(([, r]) => r).join('\n');
    const bundles = [...build.matchAll(/node lib\/cli\/main\.js bundle( --tracing)?( --encryption)? --out (\S+)/g)].map((m) => ({
      tracing: !!m[1],
      encryption: !!m[2],
      out: `/app/${m[3]}`,
    }));
    expect(bundles).toEqual([
      { tracing: false, encryption: false, out: '/app/lib/workflow-bundle.js' },
      { tracing: true, encryption: false, out: '/app/lib/workflow-bundle-tracing.js' },
      { tracing: true, encryption: true, out: '/app/lib/workflow-bundle-encrypted.js' },
    ]);
    const command = buildProgram().commands.find((c) => c.name() === 'bundle')!;
    expect(command.options.map((o) => o.long)).toEqual(expect.arrayContaining(['--out', '--tracing', '--encryption']));
    expect(dockerfile.env.REDELIVER_WORKFLOW_BUNDLE).toBe('/app/lib/workflow-bundle.js');
    // the worker's error for a tracing worker on the plain bundle names the other file
    expect(read('src/worker.ts')).toContain('/app/lib/workflow-bundle-tracing.js');
    expect(read('src/worker.ts')).toContain('/app/lib/workflow-bundle-encrypted.js');
  });

  test('its entry point is the compiled CLI, and its default command is `redeliver worker`', () => {
    expect(JSON.parse(dockerfile.get('ENTRYPOINT')[0]!)).toEqual(['node', 'lib/cli/main.js']);
    expect(JSON.parse(dockerfile.get('CMD')[0]!)).toEqual(['worker']);
    // tsconfig.build.json compiles src/ into lib/: src/cli/main.ts becomes lib/cli/main.js
    const build = JSON.parse(read('tsconfig.build.json')) as { compilerOptions: { rootDir: string }; include: string[] };
    expect(build.compilerOptions.rootDir).toBe('src');
    expect(JSON.parse(read('tsconfig.json')).compilerOptions.outDir).toBe('lib');
    expect(existsSync(path.join(ROOT, 'src/cli/main.ts'))).toBe(true);
    expect(buildProgram().commands.map((c) => c.name())).toEqual(expect.arrayContaining(['worker', 'codec-server', 'bundle']));
  });

  test('runs as a non-root user', () => {
    expect(dockerfile.get('USER')).toEqual(['node']);
  });

  test('sets only variables the worker reads, with valid values', () => {
    const { REDELIVER_WORKFLOW_BUNDLE: _bundle, NODE_ENV: _node, ...env } = dockerfile.env;
    expect(Object.keys(env).filter((name) => !isKnownVariable(name))).toEqual([]);
    const settings = workerSettingsFromEnv({ ...env, HOME: '/nonexistent' });
    expect(settings).toMatchObject({ healthAddress: '0.0.0.0:8080', prometheusAddress: '0.0.0.0:9464' });
  });

  test("its health check asks the worker's health endpoint, on the port the image exposes", () => {
    const check = dockerfile.get('HEALTHCHECK')[0]!;
    const port = dockerfile.env.REDELIVER_HEALTH_ADDRESS!.split(':').at(-1);
    expect(check).toContain(`http://127.0.0.1:${port}/healthz`);
    expect(dockerfile.get('EXPOSE')[0]!.split(/\s+/)).toEqual([port, dockerfile.env.REDELIVER_PROMETHEUS_ADDRESS!.split(':').at(-1)]);
    expect(read('src/telemetry/health.ts')).toContain("'/healthz'");
  });

  test('copies only what .dockerignore lets into the build', () => {
    const allowed = read('.dockerignore')
      .split('\n')
      .filter((l) => l.startsWith('!'))
      .map((l) => l.slice(1).replace(/\/$/, ''));
    const copied = dockerfile.stages[0]!.instructions.filter(([op]) => op === 'COPY').flatMap(([, r]) => r.split(/\s+/).slice(0, -1));
    expect(copied.filter((c) => !allowed.includes(c.replace(/\/$/, '')))).toEqual([]);
    for (const file of copied) expect(existsSync(path.join(ROOT, file))).toBe(true);
  });
});

describe('docs/deploying.md', () => {
  const START =
    '<!-- environment:start — rendered from src/config/environment.ts; `UPDATE_DOCS=1 npx jest test/integration/production/deployment` rewrites it -->';
  const END = '<!-- environment:end -->';

  test('lists exactly the variables src/config reads, with their meaning and default', () => {
    const doc = read('docs/deploying.md');
    const table = [
      '| variable | read by | meaning | default |',
      '|---|---|---|---|',
      ...ENVIRONMENT.map((v) => `| \`${v.name}\` | ${v.readBy.join(', ')} | ${v.meaning.replace(/\|/g, '\\|')} | ${v.default} |`),
    ].join('\n');
    const start = doc.indexOf(START);
    const end = doc.indexOf(END);
    expect(start).toBeGreaterThan(0);
    if (process.env.UPDATE_DOCS)
      writeFileSync(path.join(ROOT, 'docs/deploying.md'), `${doc.slice(0, start + START.length)}\n\n${table}\n\n${doc.slice(end)}`);
    else expect(doc.slice(start + START.length, end).trim()).toBe(table);
  });
});

function seconds(duration: string): number {
  const m = /^(\d+)(s|m)$/.exec(duration);
  if (!m) throw new Error(`unexpected duration ${duration}`);
  return Number(m[1]) * (m[2] === 'm' ? 60 : 1);
}
