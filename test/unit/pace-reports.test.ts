import type { Client } from '@temporalio/client';
import type { AttemptOutcome, EndpointReport } from '../../src/endpoints/types';
import { EndpointReporter } from '../../src/worker-services/endpoint-reporter';
import { DEFAULT_RECOVERY_MAX_IN_FLIGHT, Pacer } from '../../src/worker-services/pacer';

// A worker's reports carry its recovery pace (docs/endpoint-health.md, "Seeing the pace") while it is not healthy,
// and only then: reports of a healthy endpoint stay as small as before.

const E = 'ingest.example.com';

function fakeClient() {
  const reports: EndpointReport[] = [];
  const client = {
    options: { namespace: 'default' },
    withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn(),
    workflow: {
      signalWithStart: (_type: string, o: { signalArgs: unknown[] }) => {
        reports.push(o.signalArgs[0] as EndpointReport);
        return Promise.resolve({});
      },
    },
  };
  return { client: client as unknown as Client, reports };
}

test('a healthy endpoint is reported without a pace; a failing one with it; a pace goes only with attempts, never in a report of its own', async () => {
  const { client, reports } = fakeClient();
  const reporter = new EndpointReporter(client, 'q', { identity: 'w1' });
  const pacer = new Pacer('w1');
  reporter.showPaceOf(pacer);
  const attempted = (outcome: AttemptOutcome) => {
    reporter.attempted(E, outcome);
    pacer.attempted(E, outcome);
  };
  attempted({ at: Date.now(), ok: true, class: 'success', code: 'ok' });
  await reporter.flush();
  expect(reports).toHaveLength(1);
  expect(reports[0]!.pace).toBeUndefined();

  for (let i = 0; i < 3; i++) attempted({ at: Date.now(), ok: false, class: 'server', code: 'http-503' });
  await reporter.flush();
  expect(reports).toHaveLength(2);
  expect(reports[1]!.pace).toMatchObject({ state: 'failing', window: 0, cap: DEFAULT_RECOVERY_MAX_IN_FLIGHT });

  // nothing new to report: no report, even when the pace changes without this worker's attempts (a long outage with
  // nothing sent costs the endpoint's workflow nothing)
  await reporter.flush();
  pacer.attempted(E, { at: Date.now(), ok: true, class: 'success', code: 'ok' });
  await reporter.flush();
  expect(reports).toHaveLength(2);
  // the next attempt carries it
  attempted({ at: Date.now(), ok: true, class: 'success', code: 'ok' });
  await reporter.flush();
  expect(reports).toHaveLength(3);
  expect(reports[2]).toMatchObject({ pace: { state: 'recovering' } });
});
