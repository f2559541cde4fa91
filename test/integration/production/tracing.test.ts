import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../../src/temporal/sdk-adapter';
import type { Worker } from '@temporalio/worker';
import { bundleHasTracing, buildWorkflowBundle } from '../../../src/bundle';
import { Redeliver } from '../../../src/client/index';
import { ConfigError } from '../../../src/config';
import { startFlakyEndpoint, type FlakyEndpoint } from '../../../src/demo/flaky-endpoint';
import { clientTracingInterceptor, createTracing, tracingFor, type Tracing } from '../../../src/telemetry/tracing';
import { createWorker, runWorker } from '../../../src/worker';
import { quietRuntime, testAddress } from '../../support/temporal';

// OpenTelemetry tracing, switched on by configuration: spans for the client's calls, the workflow and each
// attempt, one trace from workflow to attempt; and what is refused when the pieces do not fit.

const dir = mkdtempSync(path.join(tmpdir(), 'redeliver-tracing-'));
const tracingBundle = path.join(dir, 'workflow-bundle-tracing.js');

describe('a worker with tracing on', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let endpoint: FlakyEndpoint;
  let clientConnection: Connection;
  let worker: Worker;
  let running: Promise<void>;
  const taskQueue = `tracing-${randomUUID()}`;

  beforeAll(async () => {
    quietRuntime();
    tracing = createTracing(new SimpleSpanProcessor(exporter), 'redeliver-test');
    [endpoint, clientConnection] = await Promise.all([
      startFlakyEndpoint(),
      connectClient({ address: testAddress() }),
      buildWorkflowBundle(tracingBundle, { tracing: true }),
    ]);
    const options = { taskQueue, workflowBundlePath: tracingBundle, tracing, allowAddresses: ['loopback'], encryptionKeys: null };
    worker = await createWorker({ address: testAddress(), ...options });
    running = runWorker(worker);
  }, 60_000);
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await Promise.all([clientConnection?.close(), endpoint?.close()]);
  });

  test('the bundle built with --tracing carries the workflow interceptors; the plain one does not', async () => {
    expect(await bundleHasTracing(tracingBundle)).toBe(true);
    expect(await bundleHasTracing(process.env.REDELIVER_TEST_BUNDLE!)).toBe(false);
  });

  test('a delivery leaves one trace: its start, the workflow, every attempt under the workflow', async () => {
    const client = new Client({ connection: clientConnection, interceptors: { workflow: [clientTracingInterceptor(tracing.tracer)] } });
    const handle = await new Redeliver(client, { taskQueue }).submit({
      kind: 'event',
      tenant: 'acme',
      device: 'd1',
      messageId: randomUUID(),
      target: `${endpoint.url}/traced?fail=1&status=503`,
      payload: 'x',
    });
    expect(await handle.result()).toMatchObject({ outcome: 'delivered', attempts: 2 });

    // the worker also reports attempts to the endpoint's workflow (endpoint health): a trace of its own
    const spans = exporter
      .getFinishedSpans()
      .filter((s) => !String(s.attributes.temporalWorkflowId ?? s.attributes.workflowId ?? '').startsWith('endpoint/'));
    const named = (name: string) => spans.filter((s) => s.name === name);
    expect(named('StartWorkflow:deliveryWorkflow')).toHaveLength(1);
    // the first attempt, then the retrying activity: a run that only waits for the planned time when it
    // starts early, then the run that sends
    const attempts = [...named('RunActivity:sendAttempt'), ...named('RunActivity:retryDelivery')];
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts.length).toBeLessThanOrEqual(3);
    const workflow = named('RunWorkflow:deliveryWorkflow');
    expect(workflow.length).toBeGreaterThanOrEqual(1);
    const scheduled = [...named('StartActivity:sendAttempt'), ...named('StartActivity:retryDelivery')];
    expect(scheduled).toHaveLength(2);
    // one trace, from the producer's submit to each attempt: start → workflow → scheduled attempt → attempt
    const [start] = named('StartWorkflow:deliveryWorkflow');
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([start!.spanContext().traceId]));
    expect(workflow[0]!.parentSpanId).toBe(start!.spanContext().spanId);
    for (const attempt of attempts) {
      const parent = scheduled.find((s) => s.spanContext().spanId === attempt.parentSpanId);
      expect(parent?.parentSpanId).toBe(workflow[0]!.spanContext().spanId);
    }
    // the failed attempt and the wait are marked so, the delivered attempt not
    expect(named('RunActivity:sendAttempt').map((a) => a.status.code)).toEqual([2]); // ERROR
    expect(
      named('RunActivity:retryDelivery')
        .map((a) => a.status.code)
        .sort(),
    ).toEqual(attempts.length === 3 ? [1, 2] : [1]); // OK (and ERROR: the wait)
    expect(attempts[0]!.resource.attributes['service.name']).toBe('redeliver-test');
  });
});

describe('tracing from the environment', () => {
  test('console prints spans; none traces nothing', async () => {
    expect(await tracingFor('none', 'x')).toBeUndefined();
    const console = await tracingFor('console', 'x');
    expect(console?.spanProcessor.constructor.name).toBe('SimpleSpanProcessor');
    await console?.shutdown();
  });

  test('otlp without an OTLP exporter installed is refused, naming the variable and the package to install', async () => {
    await expect(tracingFor('otlp', 'x')).rejects.toThrow(
      /^OTEL_TRACES_EXPORTER: otlp needs an OTLP trace exporter package beside redeliver, one of @opentelemetry\/exporter-trace-otlp-proto/,
    );
  });

  test('traces asked for with a bundle built without the interceptors are refused, naming the bundle', async () => {
    const err = await createWorker({
      env: { OTEL_TRACES_EXPORTER: 'console', REDELIVER_WORKFLOW_BUNDLE: process.env.REDELIVER_TEST_BUNDLE! },
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]).toMatchObject({
      variable: 'REDELIVER_WORKFLOW_BUNDLE',
      message: expect.stringContaining('redeliver bundle --tracing'),
    });
  });
});
