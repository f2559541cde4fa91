import { context, propagation, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';
import { AsyncLocalStorageContextManager } from './context-manager';

/** `OTEL_TRACES_EXPORTER`, as OpenTelemetry names it; redeliver's default is `none`. */
export const TRACES_EXPORTERS = ['none', 'console', 'otlp'] as const;
export type TracesExporter = (typeof TRACES_EXPORTERS)[number];

/** The OTLP exporter packages tried for `otlp`, in order; none is installed with redeliver. */
export const OTLP_PACKAGES = [
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/exporter-trace-otlp-grpc',
];

/** The workflow interceptors that must be inside the workflow bundle for workflow spans. */
export const WORKFLOW_TRACING_MODULE = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

export interface Tracing {
  tracer: Tracer;
  spanProcessor: SpanProcessor;
  resource: Resource;
  /** Flushes and stops exporting. */
  shutdown(): Promise<void>;
}

/**
 * A tracer provider of redeliver's own around `spanProcessor`. Global are only what the interceptors need
 * to carry a trace from client to workflow to attempt, and only where the application has not set its own:
 * the W3C propagator and a context manager.
 */
export function createTracing(spanProcessor: SpanProcessor, serviceName = 'redeliver-worker'): Tracing {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const resource = new Resource({ 'service.name': serviceName });
  const provider = new BasicTracerProvider({ resource });
  provider.addSpanProcessor(spanProcessor);
  return { tracer: provider.getTracer('redeliver'), spanProcessor, resource, shutdown: () => provider.shutdown() };
}

/**
 * Tracing as `OTEL_TRACES_EXPORTER` asks: `console` prints each span; `otlp` loads an OTLP exporter
 * package the operator installed beside redeliver (it reads `OTEL_EXPORTER_OTLP_ENDPOINT` and the other
 * standard variables itself); `none` traces nothing.
 */
export async function tracingFor(exporter: TracesExporter, serviceName: string): Promise<Tracing | undefined> {
  if (exporter === 'none') return undefined;
  if (exporter === 'console') return createTracing(new SimpleSpanProcessor(new ConsoleSpanExporter()), serviceName);
  return createTracing(new BatchSpanProcessor(await loadOtlpExporter()), serviceName);
}

async function loadOtlpExporter(): Promise<SpanExporter> {
  for (const name of OTLP_PACKAGES) {
    let mod: { OTLPTraceExporter?: new () => SpanExporter };
    try {
      mod = (await import(name)) as typeof mod;
    } catch {
      continue;
    }
    if (mod.OTLPTraceExporter) return new mod.OTLPTraceExporter();
  }
  throw new Error(
    `OTEL_TRACES_EXPORTER: otlp needs an OTLP trace exporter package beside redeliver, one of ${OTLP_PACKAGES.join(', ')} ` +
      '(the 0.5x line that goes with @opentelemetry/sdk-trace-base 1.x), e.g. npm install @opentelemetry/exporter-trace-otlp-proto@0.57',
  );
}

/** Worker options that trace every attempt (activity spans) and, when the bundle has them, the workflow. */
export function workerTracingOptions(tracing: Tracing, options: { bundling: boolean }): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  return {
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer: tracing.tracer }),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
      // with a pre-built bundle the workflow interceptors are in it already (`redeliver bundle --tracing`)
      ...(options.bundling && { workflowModules: [WORKFLOW_TRACING_MODULE] }),
    },
    // the workflow's spans leave its sandbox through this sink
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}

/** The client interceptor that starts a span for each call and hands its context to the workflow. */
export function clientTracingInterceptor(tracer?: Tracer): OpenTelemetryWorkflowClientInterceptor {
  return new OpenTelemetryWorkflowClientInterceptor(tracer ? { tracer } : {});
}
