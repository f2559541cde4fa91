import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { waitUntilServing } from '../../src/dev/dev-server';
import { SEARCH_ATTRIBUTES } from '../../src/contract';
import { freePort } from './ports';

const run = promisify(execFile);
const ROOT = path.join(__dirname, '..', '..');
/** Names the Java SDK release whose test server we run, and its jars' Maven coordinates. */
export const POM = path.join(ROOT, 'test', 'time-skipping', 'pom.xml');

/**
 * Where the server's jars are kept: `.temporal/test-server/<hash of the pom>/lib` (git-ignored), so a
 * change of version in the pom fetches afresh. Maven's own cache (~/.m2) keeps the downloads.
 */
export function testServerLibDir(): string {
  const hash = createHash('sha256').update(readFileSync(POM)).digest('hex').slice(0, 12);
  return path.join(ROOT, '.temporal', 'test-server', hash, 'lib');
}

/**
 * Fetches the Java time-skipping test server and its dependencies from Maven Central with Maven, once.
 * The TypeScript SDK's own download of it needs the open internet; Maven Central is a registry we reach.
 */
export async function ensureTestServerJars(log: (line: string) => void = () => undefined): Promise<string> {
  const lib = testServerLibDir();
  if (existsSync(path.join(lib, '.complete'))) return lib;
  const partial = `${lib}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  log(`fetching the Temporal test server with Maven (${path.relative(ROOT, POM)}) into ${path.relative(ROOT, lib)} ...`);
  try {
    await run('mvn', ['-B', '-q', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${partial}`, '-DincludeScope=runtime'], {
      maxBuffer: 16 * 1024 * 1024,
      timeout: 10 * 60_000,
    });
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    const e = err as { code?: string; stdout?: string; message: string };
    if (e.code === 'ENOENT')
      throw new Error('Maven (mvn) and a JDK are needed to fetch the Temporal test server: install them (Debian: maven, default-jdk)');
    throw new Error(`could not fetch the Temporal test server with Maven: ${e.message}\n${e.stdout ?? ''}`);
  }
  if (!readdirSync(partial).some((f) => f.startsWith('temporal-test-server-')))
    throw new Error(`Maven put no temporal-test-server jar into ${partial}`);
  writeFileSync(path.join(partial, '.complete'), '');
  // another process may have finished first: either copy is whole
  if (!existsSync(path.join(lib, '.complete'))) {
    rmSync(lib, { recursive: true, force: true });
    mkdirSync(path.dirname(lib), { recursive: true });
    renameSync(partial, lib);
  } else {
    rmSync(partial, { recursive: true, force: true });
  }
  return lib;
}

export interface TimeSkippingServer {
  /** The SDK's test environment on this server: `env.sleep()` and awaiting a result skip time. */
  env: TestWorkflowEnvironment;
  address: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts the Java test server on a free port (`TestServer <port>`), registers the delivery's search
 * attributes on it (it refuses to start a workflow with unregistered ones, as a real server does), and
 * connects the SDK's TestWorkflowEnvironment to it with time skipping on.
 */
export async function startTimeSkippingServer(options: { logFile?: string; startTimeoutMs?: number } = {}): Promise<TimeSkippingServer> {
  const lib = await ensureTestServerJars((line) => process.stderr.write(`${line}\n`));
  const port = await freePort();
  const child = spawn(
    'java',
    // no --enable-time-skipping: like the SDK's own launch, the server starts with skipping locked, and
    // the client unlocks it only while it awaits a result or sleeps (with the flag, time runs ahead even
    // while a workflow task is outstanding: the client's unlock takes away the task's lock)
    ['-Dorg.slf4j.simpleLogger.defaultLogLevel=warn', '-cp', `${lib}${path.sep}*`, 'io.temporal.testserver.TestServer', String(port)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (options.logFile) {
    mkdirSync(path.dirname(options.logFile), { recursive: true });
    const out = createWriteStream(options.logFile, { flags: 'a' });
    child.stdout.pipe(out);
    child.stderr.pipe(out);
  } else {
    child.stdout.resume();
    child.stderr.resume();
  }
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  const stopProcess = async () => {
    if (spawnError || child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilServing(address, {
      name: 'the Temporal test server',
      timeoutMs: options.startTimeoutMs ?? 60_000,
      intervalMs: 200,
      failed: () => {
        if (spawnError) return new Error(`could not start java for the Temporal test server (a JDK 17+ is needed): ${spawnError.message}`);
        if (child.exitCode !== null || child.signalCode !== null)
          return new Error(`the Temporal test server exited (${child.exitCode ?? child.signalCode}) while starting`);
        return undefined;
      },
      channelArgs: KEEPALIVE_WITHIN_JAVA_POLICY,
    });
    const env = await connectTimeSkipping(address);
    await env.connection.operatorService.addSearchAttributes({
      namespace: 'default',
      searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTES.map((k) => [k.name, INDEXED_VALUE_TYPE[k.type]!])),
    });
    return {
      env,
      address,
      process: child,
      async stop() {
        await env.teardown();
        await stopProcess();
      },
    };
  } catch (err) {
    await stopProcess();
    throw err;
  }
}

const { IndexedValueType } = temporal.api.enums.v1;
/** The server's type of each of the SDK's search attribute types. */
const INDEXED_VALUE_TYPE: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  TEXT: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  DOUBLE: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  DATETIME: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KEYWORD_LIST: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/**
 * The client pings every 30 s, even without calls in flight; grpc-java servers allow a ping every 5 min
 * and none without calls, and after three early pings they close the connection (GOAWAY "too_many_pings").
 * The client's retry then sends the RPC in flight again — for `unlockTimeSkippingWithSleep` that is a
 * second unlock, and time runs ahead while a workflow task is outstanding (an attempt 13 h late in a
 * 3-day test). Pings that keep to the server's policy:
 */
const KEEPALIVE_WITHIN_JAVA_POLICY = { 'grpc.keepalive_time_ms': 10 * 60_000, 'grpc.keepalive_permit_without_calls': 0 };

/**
 * `TestWorkflowEnvironment.createTimeSkipping()` can only start the server itself (from a download, or a
 * binary it gives 5 s to answer: too little for a JVM on a loaded 2-core machine); its public
 * `createFromExistingServer()` turns time skipping off. The private `create` that both call takes an
 * existing server with time skipping on: the connections get the TestService, the client skips time
 * while it awaits a result, and `env.sleep()` skips instead of sleeping.
 */
async function connectTimeSkipping(address: string): Promise<TestWorkflowEnvironment> {
  const create = (TestWorkflowEnvironment as unknown as { create(opts: object): Promise<TestWorkflowEnvironment> }).create.bind(
    TestWorkflowEnvironment,
  );
  const env = await create({
    server: { type: 'existing' },
    address,
    namespace: 'default',
    supportsTimeSkipping: true,
    connectionOptions: { channelArgs: KEEPALIVE_WITHIN_JAVA_POLICY },
  });
  if (!env.supportsTimeSkipping) throw new Error('the test environment did not turn time skipping on');
  return env;
}
