import {
  applySettings,
  breakerFor,
  checkSettingsChange,
  modeProblems,
  nextMode,
  type BreakerState,
  type EndpointControl,
  type EndpointMode,
  type EndpointSettings,
  type ModeChange,
} from '../endpoints/controls';
import { humanDuration } from '../delivery/summary';
import { refusal } from '../errors';
import type { EndpointHealth } from '../endpoints/health';
import type { ControlsCarried } from '../contract';
import { ENDPOINT_BREAKER, type PatchId } from './patches';

/** What the controls do outside their state: Temporal's functions in the workflow, a recorder in unit tests. */
export interface ControlsEffects {
  /** Whether a patch applies (`patched()`: its marker is a command the first time a run asks). */
  patched(id: PatchId): boolean;
  /** Publishes the control in the workflow's memo, where every worker reads it (`upsertMemo`: a command). */
  publish(control: EndpointControl): void;
  /** The control the run's memo held at its start (a run continued as new starts with its predecessor's). */
  published(): unknown;
}

export interface ControlsEnv {
  effects: ControlsEffects;
  /** In a workflow, Date.now: the time of the current workflow task. */
  now: () => number;
  /** Told when the endpoint is disabled, by an operator or by itself (operational events). */
  disabled?: (mode: EndpointMode) => void;
}
const CLOSED: BreakerState = { open: false, since: null, prober: null };

/**
 * The operator's side of an endpoint's workflow: the endpoint's own limits, set by an update and published in
 * the workflow's memo, which every worker reads before it sends (docs/endpoint-health.md: Limits, Circuit breaker, Pause, resume, disable).
 * Calls no Temporal API: the workflow registers the updates and gives the effects.
 */
export class EndpointControls {
  private settings: EndpointSettings;
  private breaker: BreakerState;
  private mode: EndpointMode | undefined;
  private readonly effects: ControlsEffects;
  private readonly now: () => number;
  private readonly disabled: (mode: EndpointMode) => void;

  constructor(carried: ControlsCarried | undefined, env: ControlsEnv) {
    this.settings = { ...carried?.settings };
    this.breaker = carried?.breaker ?? CLOSED;
    this.mode = carried?.mode;
    this.effects = env.effects;
    this.now = env.now;
    this.disabled = env.disabled ?? (() => undefined);
    // a run continued as new publishes its settings again, unless its memo has them already
    if (this.keepsOpen && JSON.stringify(this.effects.published()) !== JSON.stringify(this.control())) this.publish();
  }

  /** The `mode` update's validator: a change with a bad field is refused, naming it. */
  checkMode(change: unknown): void {
    refuseProblems(modeProblems(change));
  }

  /** The `mode` update: pauses, resumes, disables or enables the endpoint; the control now in force. */
  changeMode(change: ModeChange): EndpointControl {
    this.enterMode(nextMode(this.mode, change, this.now()));
    return this.control();
  }

  /** The `settings` update's validator: a change with a bad field is refused, naming it. */
  checkSettings(change: unknown): void {
    refuseProblems(checkSettingsChange(change).problems);
  }

  /** The `settings` update: the endpoint's own limits; the control now in force. */
  changeSettings(change: unknown): EndpointControl {
    this.settings = applySettings(this.settings, checkSettingsChange(change).change);
    this.publish();
    return this.control();
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
    if (same || !this.effects.patched(ENDPOINT_BREAKER)) return;
    this.breaker = next;
    this.publish();
  }

  /** `autoDisableAfter`: an endpoint failing that long is disabled, as an operator would (only endpoints given it: no marker needed). */
  private disableWhenFailingTooLong(health: EndpointHealth): void {
    const at = this.autoDisableAt(health);
    const now = this.now();
    if (at === null || now < at || health.failingSince === null) return;
    const after = at - health.failingSince;
    const failingFor = now - health.failingSince;
    const reason = `failing for ${humanDuration(failingFor)} since ${new Date(health.failingSince).toISOString()} (auto-disable after ${humanDuration(after)})`;
    this.enterMode(nextMode(this.mode, { state: 'disabled', reason }, now, 'auto'));
  }

  /** When the endpoint disables itself if it goes on failing (`autoDisableAfter`); null: it does not. */
  autoDisableAt(health: EndpointHealth): number | null {
    const after = this.settings.autoDisableAfter;
    if (typeof after !== 'number' || health.failingSince === null || this.mode?.state === 'disabled') return null;
    return health.failingSince + after;
  }

  private enterMode(mode: EndpointMode | undefined): void {
    const wasDisabled = this.mode?.state === 'disabled';
    this.mode = mode;
    this.publish();
    if (mode?.state === 'disabled' && !wasDisabled) this.disabled(mode);
  }

  private publish(): void {
    this.effects.publish(this.control());
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
  if (problems.length) throw refusal('InvalidSettings', problems.map((p) => `${p.field}: ${p.message}`).join('; '));
}
