import { ApplicationFailure, patched, setHandler, upsertMemo, workflowInfo } from '@temporalio/workflow';
import {
  applySettings,
  breakerFor,
  checkSettingsChange,
  CONTROL_MEMO,
  modeProblems,
  nextMode,
  type BreakerState,
  type EndpointControl,
  type EndpointMode,
  type EndpointSettings,
} from '../endpoints/controls';
import { humanDuration } from '../delivery/summary';
import type { EndpointHealth } from '../endpoints/health';
import { endpointModeUpdate, endpointSettingsUpdate } from './definitions';
import { ENDPOINT_BREAKER } from './patches';

/** What an endpoint's workflow carries to its next run about its controls. */
export interface ControlsCarried {
  settings: EndpointSettings;
  /** Absent in runs from before the breaker. */
  breaker?: BreakerState;
  mode?: EndpointMode;
}

const CLOSED: BreakerState = { open: false, since: null, prober: null };

/**
 * The operator's side of an endpoint's workflow (workflows/endpoint.ts): the endpoint's own limits, set by
 * an update and published in the workflow's memo, which every worker reads before it sends
 * (activities/control-cache.ts, activities/admission.ts).
 */
export class EndpointControls {
  private settings: EndpointSettings;
  private breaker: BreakerState;
  private mode: EndpointMode | undefined;

  /** `disabled`: told when the endpoint is disabled, by an operator or by itself (operational events). */
  constructor(
    carried?: ControlsCarried,
    private readonly disabled: (mode: EndpointMode) => void = () => undefined,
  ) {
    this.settings = { ...carried?.settings };
    this.breaker = carried?.breaker ?? CLOSED;
    this.mode = carried?.mode;
    // a run continued as new publishes its settings again, unless its memo has them already
    if (this.keepsOpen && JSON.stringify(workflowInfo().memo?.[CONTROL_MEMO]) !== JSON.stringify(this.control())) this.publish();
  }

  /**
   * Registers the updates; a change with a bad field is refused by the validator, naming it. `announce`
   * starts sending the events a mode change made (an endpoint disabled); the update is answered at once, the
   * change in force, not held until they are sent (a worker whose activity slots are full would hold it).
   */
  register(announce: () => void = () => undefined): void {
    setHandler(
      endpointModeUpdate,
      (change) => {
        this.changeMode(nextMode(this.mode, change, Date.now()));
        announce();
        return this.control();
      },
      { validator: (change) => refuseProblems(modeProblems(change)) },
    );
    setHandler(
      endpointSettingsUpdate,
      (change) => {
        this.settings = applySettings(this.settings, checkSettingsChange(change).change);
        this.publish();
        return this.control();
      },
      { validator: (change) => refuseProblems(checkSettingsChange(change).problems) },
    );
  }

  control(): EndpointControl {
    return {
      settings: { ...this.settings },
      ...(this.mode && { mode: { ...this.mode } }),
      ...(this.breaker.open && { breaker: { ...this.breaker } }),
    };
  }

  /**
   * The endpoint's health as the loop recorded it: the breaker opens while it is failing (one prober: the
   * first of the workers reporting to it) and closes when attempts go through again; published when it changes.
   */
  observe(health: EndpointHealth, workers: string[]): void {
    this.disableWhenFailingTooLong(health);
    const next = breakerFor(this.settings, health.state, health.failingSince, workers);
    const same = next.open === this.breaker.open && next.prober === this.breaker.prober;
    if (same || !patched(ENDPOINT_BREAKER)) return;
    this.breaker = next;
    this.publish();
  }

  /** `autoDisableAfter`: an endpoint failing that long is disabled, as an operator would (only endpoints given it: no marker needed). */
  private disableWhenFailingTooLong(health: EndpointHealth): void {
    const at = this.autoDisableAt(health);
    if (at === null || Date.now() < at || health.failingSince === null) return;
    const after = at - health.failingSince;
    const failingFor = Date.now() - health.failingSince;
    const reason = `failing for ${humanDuration(failingFor)} since ${new Date(health.failingSince).toISOString()} (auto-disable after ${humanDuration(after)})`;
    this.changeMode(nextMode(this.mode, { state: 'disabled', reason }, Date.now(), 'auto'));
  }

  /** When the endpoint disables itself if it goes on failing (`autoDisableAfter`); null: it does not. */
  autoDisableAt(health: EndpointHealth): number | null {
    const after = this.settings.autoDisableAfter;
    if (typeof after !== 'number' || health.failingSince === null || this.mode?.state === 'disabled') return null;
    return health.failingSince + after;
  }

  private changeMode(mode: EndpointMode | undefined): void {
    const wasDisabled = this.mode?.state === 'disabled';
    this.mode = mode;
    this.publish();
    if (mode?.state === 'disabled' && !wasDisabled) this.disabled(mode);
  }

  private publish(): void {
    upsertMemo({ [CONTROL_MEMO]: this.control() });
  }

  /** An endpoint with settings of its own stays open when idle: closing would drop them. */
  get keepsOpen(): boolean {
    return Object.keys(this.settings).length > 0 || this.breaker.open || this.mode !== undefined;
  }

  carried(): ControlsCarried {
    return { settings: { ...this.settings }, breaker: { ...this.breaker }, ...(this.mode && { mode: { ...this.mode } }) };
  }
}

/** An update's validator: refuses a change with problems, naming each field. */
function refuseProblems(problems: { field: string; message: string }[]): void {
  if (problems.length)
    throw ApplicationFailure.create({ type: 'InvalidSettings', message: problems.map((p) => `${p.field}: ${p.message}`).join('; ') });
}
