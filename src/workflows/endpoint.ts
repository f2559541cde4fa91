import { condition, patched, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import { CONTROL_MEMO } from '../endpoints/controls';
import type { EndpointStatus } from '../endpoints/types';
import {
  type EndpointWorkflowInput,
  endpointDowntimeQuery,
  endpointModeUpdate,
  endpointRecordingQuery,
  endpointReportSignal,
  endpointSettingsUpdate,
  endpointStatusQuery,
  endpointTimelineQuery,
} from '../contract';
import { EndpointTracker, type EndpointEffects } from './endpoint-state';
import { continueAsNewWhenIdle, historyTooLong } from './history';
import { countTransition, measureState, sendEvents } from './operational-events';
import { ENDPOINT_WAKE_AHEAD } from './patches';
import { temporalEffects } from './visibility';

const DEFAULT_HISTORY_LIMIT = 2_000;

/** The endpoint state's effects inside a workflow: Temporal's own. */
function endpointEffects(endpoint: string): EndpointEffects {
  return {
    details: temporalEffects.details,
    upsert: temporalEffects.upsert,
    patched,
    publish: (control) => upsertMemo({ [CONTROL_MEMO]: control }),
    published: () => workflowInfo().memo?.[CONTROL_MEMO],
    measure: (previous, state) => measureState(endpoint, previous, state),
    countDisabled: () => countTransition(endpoint, 'disabled'),
  };
}

/**
 * One endpoint's health and downtime, from the attempts every worker reports (docs/endpoint-health.md):
 * failing / recovering / healthy in the `EndpointHealth` search attribute, the downtime ledger of the guide,
 * the attempts per second for a plot, the workers retrying to it (each takes 1/N of the retry budget), and a
 * bounded recording of its attempts for replaying its outages. The recording added state and a query, no
 * command: running endpoint workflows need no patch (endpointWorkflow_reports.json replays). Its state and
 * decisions are in EndpointTracker; this is the loop: the events' activity, the wait, continue-as-new.
 */
export async function endpointWorkflow(input: EndpointWorkflowInput): Promise<EndpointStatus> {
  const { endpoint } = input;
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  const d = new EndpointTracker(input, { effects: endpointEffects(endpoint) });
  // events a handler started sending: the run does not end (or continue as new) before they have gone
  const announcing = new Set<Promise<void>>();
  const announced = () => Promise.all(announcing);
  setHandler(
    endpointModeUpdate,
    (change) => {
      const control = d.controls.changeMode(change);
      // answered at once, the change in force: a worker whose activity slots are full would hold the events
      const sent = sendEvents(d.events, Date.now());
      announcing.add(sent);
      void sent.finally(() => announcing.delete(sent));
      return control;
    },
    { validator: (change) => d.controls.checkMode(change) },
  );
  setHandler(endpointSettingsUpdate, (change) => d.controls.changeSettings(change), {
    validator: (change) => d.controls.checkSettings(change),
  });
  setHandler(endpointReportSignal, (report) => d.report(report));
  setHandler(endpointStatusQuery, (asOf?: number) => d.status(asOf));
  setHandler(endpointDowntimeQuery, (since?: number, asOf?: number) => d.downtime(since, asOf));
  setHandler(endpointTimelineQuery, () => d.timelineNow());
  setHandler(endpointRecordingQuery, (since?: number, asOf?: number) => d.recordingSince(since, asOf));

  for (;;) {
    const now = Date.now();
    d.observe(now);
    await sendEvents(d.events, now);
    if (historyTooLong(historyLimit)) {
      await announced();
      await continueAsNewWhenIdle<typeof endpointWorkflow>({ endpoint, historyLimit, carried: d.carried() });
    }
    // wake for the next report, or when something changes by time alone
    const wait = d.nextWait(now, () => patched(ENDPOINT_WAKE_AHEAD));
    const woken = await condition(() => d.reported, wait.timeoutMs);
    if (d.closesAfter(wait, woken)) {
      await announced();
      return d.status();
    }
  }
}
