import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { searchAttributeTypeName, waitUntilServing } from '../dev/dev-server';
import { freePortIn, freeServerPort, portFree } from '../dev/ports';
import { ensureTemporalCli, projectRoot } from '../dev/temporal-cli';
import { SEARCH_ATTRIBUTES } from '../contract';
import { ensureGoBuild, TEMPORAL_SERVER_BUILD, TEMPORAL_SERVER_VERSION, TEMPORAL_UI_BUILD } from './go-build';
import { findPostgres, initPostgres, POSTGRES_USER, postgresSpec, postgresUser, waitForPostgres } from './postgres';
import { isRunning, spawnDetached, stopProcess, type ProcessSpec } from './processes';
import { countExecutions } from '../temporal/sdk-adapter';

const run = promisify(execFile);

type Log = (line: string) => void;

/** The folder whose files docker-compose.yml mounts: the server's configuration, its dynamic config, the set-up scripts. */
export const DEPLOY_DIR = path.join(projectRoot(), 'deploy', 'temporal');
/** As docker-compose.yml sets NUM_HISTORY_SHARDS: fixed for the life of a cluster. */
export const HISTORY_SHARDS = 512;
export const NAMESPACE = 'default';

export interface ClusterOptions {
  /** Where the cluster keeps its state, data and logs. */
  dir: string;
  /** The frontend's gRPC port on 127.0.0.1. Default 7233. */
  port?: number;
  /** History service processes, which share the shards. Default 2. */
  historyHosts?: number;
  /** Port of the Temporal UI (built on first use); null: no UI. Default null. */
  uiPort?: number | null;
  log?: Log;
}

export interface ServiceState {
  /** `postgresql`, `frontend`, `history-1`, …, `matching`, `worker`, `ui`. */
  name: string;
  pid: number;
  /** Where it serves: gRPC for Temporal's services, SQL for PostgreSQL, HTTP for the UI. */
  port: number;
  /** Temporal's services: where its Prometheus metrics are. */
  metricsPort?: number;
  spec: ProcessSpec;
}

export interface ClusterState {
  temporalVersion: string;
  /** The frontend, for TEMPORAL_ADDRESS. */
  address: string;
  uiUrl: string | null;
  historyShards: number;
  postgres: { password: string };
  services: ServiceState[];
}

export interface ServiceStatus {
  name: string;
  pid: number;
  port: number;
  running: boolean;
}

const stateFile = (dir: string) => path.join(dir, 'cluster.json');

/** The state `cluster up` wrote in `dir`; an error naming the folder if there is none. */
export function readCluster(dir: string): ClusterState {
  if (!existsSync(stateFile(dir))) throw new Error(`no cluster in ${dir}: \`redeliver cluster up --dir ${dir}\` starts one`);
  return JSON.parse(readFileSync(stateFile(dir), 'utf8')) as ClusterState;
}

function writeCluster(dir: string, state: ClusterState): void {
  // it holds the database password
  writeFileSync(stateFile(dir), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}

export function clusterStatus(dir: string): { address: string; uiUrl: string | null; services: ServiceStatus[] } {
  const state = readCluster(dir);
  return {
    address: state.address,
    uiUrl: state.uiUrl,
    services: state.services.map((s) => ({ name: s.name, pid: s.pid, port: s.port, running: isRunning(s.pid, s.spec.command) })),
  };
}

/**
 * Starts a Temporal cluster on PostgreSQL in `dir`, each service a process of its own, and returns once
 * redeliver can use it: the schema is up to date, every history host holds shards, and the namespace and
 * redeliver's search attributes answer. On a folder whose cluster was stopped, it starts again on the same
 * data. The processes outlive the caller: `clusterDown` stops them.
 */
export async function clusterUp(options: ClusterOptions): Promise<ClusterState> {
  const log = options.log ?? (() => undefined);
  const dir = path.resolve(options.dir);
  const previous = existsSync(stateFile(dir)) ? readCluster(dir) : undefined;
  if (previous && alreadyUp(dir, previous)) {
    log(`the cluster in ${dir} is running already`);
    return previous;
  }
  const port = options.port ?? 7233;
  for (const [flag, p] of [
    ['--port', port],
    ['--ui-port', options.uiPort],
  ] as const) {
    if (p != null && !(await portFree(p)))
      throw new Error(`port ${p} on 127.0.0.1 is taken (another Temporal?): choose another with ${flag}`);
  }
  const [binaries, cli] = await Promise.all([ensureGoBuild(TEMPORAL_SERVER_BUILD, log), ensureTemporalCli(log)]);
  prepareDir(dir, { temporal: cli, 'temporal-sql-tool': binaries['temporal-sql-tool']! });
  const ui = options.uiPort == null ? undefined : await ensureGoBuild(TEMPORAL_UI_BUILD, log);
  const state: ClusterState = {
    temporalVersion: TEMPORAL_SERVER_VERSION,
    address: `127.0.0.1:${port}`,
    uiUrl: null,
    historyShards: previous?.historyShards ?? HISTORY_SHARDS,
    postgres: { password: previous?.postgres.password ?? randomBytes(18).toString('base64url') },
    services: [],
  };
  const started = (service: ServiceState) => {
    state.services.push(service);
    writeCluster(dir, state);
  };
  try {
    const postgres = await postgresService(dir, state, !previous, log);
    started({ ...postgres, pid: spawnDetached(postgres.spec) });
    await waitForPostgres(path.dirname(postgres.spec.command), postgres.port, () => exited(state));
    log('creating or upgrading the Temporal schema (deploy/temporal/setup-postgres.sh) ...');
    await runScript(dir, 'setup-postgres.sh', {
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: String(postgres.port),
      POSTGRES_USER,
      SQL_PASSWORD: state.postgres.password,
    });
    const services = await temporalServices(dir, binaries['temporal-server']!, state, postgres.port, port, options.historyHosts ?? 2);
    log(
      `starting ${services.map((s) => s.name).join(', ')} (Temporal Server ${TEMPORAL_SERVER_VERSION}, logs in ${path.join(dir, 'logs')}) ...`,
    );
    // the first process on a fresh database writes the cluster's metadata, which two at once race to do (the
    // loser exits): the frontend first, the others once it serves
    const [frontend, ...others] = services;
    started({ ...frontend!, pid: spawnDetached(frontend!.spec) });
    await waitUntilServing(state.address, {
      name: 'the Temporal frontend',
      timeoutMs: 120_000,
      intervalMs: 500,
      failed: () => exited(state),
    });
    for (const service of others) started({ ...service, pid: spawnDetached(service.spec) });
    await waitForShards(state, () => exited(state));
    log(`creating the namespace "${NAMESPACE}" and redeliver's search attributes (deploy/temporal/setup-namespace.sh) ...`);
    await runScript(dir, 'setup-namespace.sh', {
      TEMPORAL_ADDRESS: state.address,
      TEMPORAL_NAMESPACE: NAMESPACE,
      REDELIVER_SEARCH_ATTRIBUTES: SEARCH_ATTRIBUTES.map((key) => `${key.name}=${searchAttributeTypeName(key.type)}`).join(' '),
    });
    await waitForNamespace(state.address);
    if (ui && options.uiPort != null) {
      const spec = uiSpec(dir, ui['temporal-ui-server']!, state.address, options.uiPort);
      started({ name: 'ui', port: options.uiPort, pid: spawnDetached(spec), spec });
      state.uiUrl = `http://localhost:${options.uiPort}`;
      writeCluster(dir, state);
    }
    return state;
  } catch (err) {
    await stopServices(state.services);
    throw err;
  }
}

/** Stops every process of the cluster in `dir` (PostgreSQL last); its data stays for the next `clusterUp`. */
export async function clusterDown(dir: string): Promise<void> {
  await stopServices(readCluster(path.resolve(dir)).services);
}

/** Stops one service (SIGKILL: at once, as a crash would); the others go on. */
export async function stopService(dir: string, name: string, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const service = serviceOf(readCluster(dir), name);
  await stopProcess(service.pid, service.spec.command, signal);
}

/** Starts one stopped service again, on its ports, as `clusterUp` started it. */
export function startService(dir: string, name: string): ServiceState {
  const state = readCluster(dir);
  const service = serviceOf(state, name);
  if (isRunning(service.pid, service.spec.command)) throw new Error(`${name} is running already (pid ${service.pid})`);
  service.pid = spawnDetached(service.spec);
  writeCluster(dir, state);
  return service;
}

function serviceOf(state: ClusterState, name: string): ServiceState {
  const service = state.services.find((s) => s.name === name);
  if (!service) throw new Error(`no service ${name}; the cluster has ${state.services.map((s) => s.name).join(', ')}`);
  return service;
}

function alreadyUp(dir: string, state: ClusterState): boolean {
  const running = state.services.filter((s) => isRunning(s.pid, s.spec.command));
  if (running.length > 0 && running.length === state.services.length) return true;
  if (running.length > 0) {
    throw new Error(
      `the cluster in ${dir} is partly running (${running.map((s) => s.name).join(', ')}): \`redeliver cluster down --dir ${dir}\` first`,
    );
  }
  return false;
}

/** Temporal's services first, all at once; PostgreSQL once they are gone (fast shutdown: SIGINT). */
async function stopServices(services: ServiceState[]): Promise<void> {
  const stop = (s: ServiceState) => stopProcess(s.pid, s.spec.command, s.name === 'postgresql' ? 'SIGINT' : 'SIGTERM');
  await Promise.all(services.filter((s) => s.name !== 'postgresql').map(stop));
  await Promise.all(services.filter((s) => s.name === 'postgresql').map(stop));
}

/** The first service that has exited, as an error quoting the end of its log. */
function exited(state: ClusterState): Error | undefined {
  const dead = state.services.find((s) => !isRunning(s.pid, s.spec.command));
  if (!dead) return undefined;
  const lines = existsSync(dead.spec.logFile) ? readFileSync(dead.spec.logFile, 'utf8').trim().split('\n') : [];
  // Temporal's log lines carry a stack trace each: their start says what happened
  const tail = lines
    .slice(-5)
    .map((line) => (line.length > 300 ? `${line.slice(0, 300)} …` : line))
    .join('\n  ');
  return new Error(`${dead.name} exited while the cluster started; the end of ${dead.spec.logFile}:\n  ${tail}`);
}

/**
 * The cluster's folder: its logs, and `bin/` with the tools the set-up scripts call by name, as they are
 * named in the temporalio/admin-tools image. As root, PostgreSQL runs as another user, who must be able to
 * enter a folder made here.
 */
function prepareDir(dir: string, tools: Record<string, string>): void {
  const fresh = !existsSync(dir);
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  if (fresh && postgresUser()) chmodSync(dir, 0o755);
  mkdirSync(path.join(dir, 'bin'), { recursive: true });
  for (const [name, target] of Object.entries(tools)) {
    rmSync(path.join(dir, 'bin', name), { force: true });
    symlinkSync(target, path.join(dir, 'bin', name));
  }
}

/** PostgreSQL's process, on a free port, with its database cluster in `dir/postgres` (made on the first start). */
async function postgresService(dir: string, state: ClusterState, fresh: boolean, log: Log): Promise<Omit<ServiceState, 'pid'>> {
  const bin = findPostgres();
  const user = postgresUser();
  const dataDir = path.join(dir, 'postgres');
  const made = existsSync(path.join(dataDir, 'PG_VERSION'));
  if (made && fresh)
    throw new Error(`${dataDir} holds a database whose password went with ${stateFile(dir)}: remove ${dir} to start afresh`);
  if (!made) {
    log(`creating a PostgreSQL database cluster in ${dataDir} (${bin}) ...`);
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (user) {
      chownSync(dataDir, user.uid, user.gid);
      try {
        execFileSync('test', ['-w', dataDir], { uid: user.uid, gid: user.gid });
      } catch {
        throw new Error(
          `PostgreSQL runs as the ${user.name} user (it refuses root), who cannot reach ${dataDir}: choose a --dir that others may enter`,
        );
      }
    }
    await initPostgres(bin, dataDir, state.postgres.password, user);
  }
  const port = await freeServerPort();
  const logFile = freshLog(dir, 'postgresql');
  return { name: 'postgresql', port, spec: postgresSpec(bin, dataDir, port, logFile, user) };
}

/** A service's log, emptied: `clusterUp` starts each log afresh, `startService` appends to it. */
function freshLog(dir: string, name: string): string {
  const file = path.join(dir, 'logs', `${name}.log`);
  writeFileSync(file, '');
  return file;
}

/** Runs one of the scripts docker-compose.yml runs in temporalio/admin-tools, with the cluster's tools and nothing of the caller's environment. */
async function runScript(dir: string, script: string, env: Record<string, string>): Promise<void> {
  const logFile = path.join(dir, 'logs', script.replace(/\.sh$/, '.log'));
  try {
    const { stdout, stderr } = await run('sh', [path.join(DEPLOY_DIR, script)], {
      // HOME: the temporal CLI would read a profile of the user's (another cluster, TLS) from it
      env: { PATH: `${path.join(dir, 'bin')}:/usr/local/bin:/usr/bin:/bin`, HOME: dir, ...env },
      timeout: 180_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    writeFileSync(logFile, stdout + stderr);
  } catch (err) {
    const { stdout = '', stderr = '', message } = err as { stdout?: string; stderr?: string; message: string };
    writeFileSync(logFile, stdout + stderr);
    const tail = (stderr || message).trim().split('\n').slice(-6).join('\n  ');
    throw new Error(`deploy/temporal/${script} failed (its output: ${logFile}):\n  ${tail}`);
  }
}

/**
 * Temporal's services as separate processes: the frontend on `port`, then `historyHosts` history
 * processes that share the shards, matching and the system worker; every other port (gRPC, membership,
 * HTTP, metrics) a free one. Each process gets the environment deploy/temporal/config.yaml is filled in from.
 */
async function temporalServices(
  dir: string,
  server: string,
  state: ClusterState,
  postgresPort: number,
  port: number,
  historyHosts: number,
): Promise<Omit<ServiceState, 'pid'>[]> {
  const taken = new Set([port, postgresPort]);
  const free = async (pick = freeServerPort): Promise<number> => {
    for (;;) {
      const p = await pick();
      if (!taken.has(p)) return (taken.add(p), p);
    }
  };
  // Temporal keeps each process's membership port in a SMALLINT column: below 32768, which is also below
  // Linux's ephemeral ports, so no outgoing connection takes it before the process binds it
  const membershipPort = () => free(() => freePortIn(10_000, 32_767));
  const common: Record<string, string> = {
    PATH: '/usr/bin:/bin',
    TEMPORAL_SERVER_CONFIG_FILE_PATH: path.join(DEPLOY_DIR, 'config.yaml'),
    DYNAMIC_CONFIG_FILE_PATH: path.join(DEPLOY_DIR, 'dynamicconfig.yaml'),
    DB: 'postgres12',
    POSTGRES_SEEDS: '127.0.0.1',
    DB_PORT: String(postgresPort),
    POSTGRES_USER,
    POSTGRES_PWD: state.postgres.password,
    NUM_HISTORY_SHARDS: String(state.historyShards),
    BIND_ON_IP: '127.0.0.1',
    FRONTEND_GRPC_PORT: String(port),
    FRONTEND_HTTP_PORT: String(await free()),
  };
  const names = ['frontend', ...Array.from({ length: historyHosts }, (_, i) => `history-${i + 1}`), 'matching', 'worker'];
  const services: Omit<ServiceState, 'pid'>[] = [];
  for (const name of names) {
    const role = name.replace(/-\d+$/, '');
    const grpc = role === 'frontend' ? port : await free();
    const metricsPort = await free();
    const env = {
      ...common,
      [`${role.toUpperCase()}_GRPC_PORT`]: String(grpc),
      [`${role.toUpperCase()}_MEMBERSHIP_PORT`]: String(await membershipPort()),
      PROMETHEUS_ENDPOINT: `127.0.0.1:${metricsPort}`,
    };
    const spec = { command: server, args: ['start', '--service', role], env, logFile: freshLog(dir, name) };
    services.push({ name, port: grpc, metricsPort, spec });
  }
  return services;
}

/** The shards a history host's log says it acquired, in order (a shard it acquired again is listed again). */
export function acquiredShards(logFile: string): number[] {
  if (!existsSync(logFile)) return [];
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('Acquired shard'))
    .map((line) => Number(/"shard-id":(\d+)/.exec(line)?.[1]))
    .filter((id) => id > 0);
}

/** Waits until every history host holds shards: the hosts share them only once each has joined the ring. */
async function waitForShards(state: ClusterState, failed: () => Error | undefined, timeoutMs = 120_000): Promise<void> {
  const hosts = state.services.filter((s) => s.name.startsWith('history-'));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const error = failed();
    if (error) throw error;
    const idle = hosts.filter((h) => acquiredShards(h.spec.logFile).length === 0);
    if (idle.length === 0) return;
    if (Date.now() > deadline) throw new Error(`${idle.map((h) => h.name).join(', ')} acquired no shard within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Waits until the frontend knows the namespace and every search attribute: a list query naming them all
 * succeeds (the frontend's namespace cache refreshes on its own schedule after the namespace is made).
 */
async function waitForNamespace(address: string, timeoutMs = 60_000): Promise<void> {
  const query = SEARCH_ATTRIBUTES.map((key) => `${key.name} IS NOT NULL`).join(' AND ');
  const connection = await Connection.connect({ address });
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      try {
        await countExecutions(connection, NAMESPACE, query);
        return;
      } catch (err) {
        if (Date.now() > deadline)
          throw new Error(`the namespace ${NAMESPACE} did not answer a query of redeliver's search attributes: ${String(err)}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection.close();
  }
}

/** The Temporal UI server as the temporalio/ui image runs it (`--env docker`), on the variables compose gives it. */
function uiSpec(dir: string, binary: string, address: string, port: number): ProcessSpec {
  return {
    command: binary,
    args: ['--root', path.dirname(binary), '--env', 'docker', 'start'],
    env: {
      PATH: '/usr/bin:/bin',
      TEMPORAL_ADDRESS: address,
      TEMPORAL_UI_PORT: String(port),
      TEMPORAL_CORS_ORIGINS: `http://localhost:${port}`,
    },
    logFile: freshLog(dir, 'ui'),
  };
}
