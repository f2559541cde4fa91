import type { AttemptError, DeliveryInput, MqttTargetInput, MqttVersion } from '../delivery/types';
import type { BackoffPolicy, BackoffPolicyInput, Duration } from '../policy/types';

/** What a producer starts: one device's command subscription (validated by `validateSubscription`). */
export interface SubscriptionInput {
  tenant: string;
  device: string;
  /**
   * The broker: an mqtt(s) URL, or the full form. Its `topic` is the topic filter subscribed to, default
   * `command/{tenant}/{device}/req/#` (Eclipse Hono's command topic); `clientId` the client id of the
   * subscription's connection: one of your own must start with `<tenant>/` (`acme/commands-1`), so that no
   * other tenant can name it; default `rdsub` and 18 random hex digits, made at start. Either stays the
   * same for the subscription's life, so the broker keeps the session and its queued commands across a
   * dropped connection.
   */
  broker: string | (MqttTargetInput & { clientId?: string });
  /** Where each received command goes, as an HTTP POST: a URL, or `{ url, headers?, timeout? }`. */
  callback: string | { url: string; headers?: Record<string, string>; timeout?: Duration };
  /**
   * A two-way command's response goes out as a `command-response` delivery: to `target` (default: the
   * same broker, credential and MQTT version, topic `command///res/{requestId}/{status}`), with `policy`
   * (default a command response's).
   */
  response?: { target?: DeliveryInput['target']; policy?: BackoffPolicyInput };
  /**
   * The backoff between subscription attempts, after a failure or a dropped connection. Default the
   * guide's (full jitter, 200 ms to 300 s), without an age bound: a subscription is kept until stopped.
   */
  policy?: BackoffPolicyInput;
  /** How long the hand-off of one command to the callback is retried (with `policy`'s backoff). Default 5 min. */
  commandMaxAge?: Duration;
  /** A spell without a working subscription longer than this is downtime. Default 1 min, as the guide defines it. */
  downtimeThreshold?: Duration;
}

/** A validated subscription, as the workflow receives it: defaults filled in, durations in ms, no secrets. */
export interface CommandSubscription {
  /** `subscription/<tenant>/<device>`: the workflow id. */
  subscriptionId: string;
  tenant: string;
  device: string;
  broker: {
    url: string;
    /** The topic filter subscribed to. */
    topic: string;
    protocolVersion: MqttVersion;
    credential: string | null;
    /** Connect and SUBACK must come within this. */
    timeout: number;
    tls: { ca?: string; servername?: string } | null;
    clientId: string;
  };
  /** The broker's host[:port]: the `Endpoint` search attribute. */
  endpoint: string;
  callback: { url: string; headers: Record<string, string>; timeout: number };
  /** Checked at start; each response delivery is validated from these when its command is answered. */
  response: { target: DeliveryInput['target']; policy: BackoffPolicyInput | null };
  policy: BackoffPolicy;
  /** The hand-off's backoff: `policy` bounded by `commandMaxAge`. */
  commandPolicy: BackoffPolicy;
  downtimeThresholdMs: number;
  submittedAt: number;
}

/** A command as the subscription received it from the broker. */
export interface ReceivedCommand {
  /** Numbered by the workflow in the order received (from 1). */
  seq: number;
  topic: string;
  /** Hono: the `<request-id>` of `command/…/req/<request-id>/<name>`; null for a one-way command. */
  requestId: string | null;
  name: string;
  /** The payload as text, or base64 when it is not UTF-8 (`encoding`). */
  payload: string;
  encoding: 'utf8' | 'base64';
  /** MQTT 5 content type, when the publisher gave one. */
  contentType: string | null;
  /** When the subscription received it (epoch ms, the worker's clock). */
  receivedAt: number;
}

export type CommandOutcome = 'queued' | 'handing' | 'handed' | 'responded' | 'rejected' | 'expired' | 'exhausted';

/** One command, as the subscription's status keeps it. */
export interface CommandRecord {
  seq: number;
  requestId: string | null;
  name: string;
  receivedAt: string;
  outcome: CommandOutcome;
  /** The callback's answer or last error: `http-200`, `http-503`, `net-ECONNREFUSED`, … */
  code: string | null;
  /** The response's status (two-way commands the callback answered). */
  status: number | null;
  /** The response's delivery id, once it was started. */
  responseId: string | null;
}

export interface CommandCounts {
  received: number;
  /** Handed to the callback (and answered, for a two-way command). */
  handed: number;
  /** Responses started as command-response deliveries. */
  responded: number;
  /** Refused by the callback, or given up after commandMaxAge. */
  failed: number;
  /** Waiting for their hand-off. */
  queued: number;
}

/** A spell without a working subscription, counted as downtime because it lasted longer than the threshold. */
export interface DowntimePeriod {
  from: string;
  to: string;
  durationMs: number;
  /** Why the subscription was lost (or had not been made yet). */
  reason: string;
}

/** The guide's downtime: time without a working subscription, in spells longer than the threshold (1 min). */
export interface DowntimeReport {
  thresholdMs: number;
  /** Since when downtime is counted (the subscription's start). */
  since: string;
  /** All downtime, ended periods and the current spell when it counts. */
  totalMs: number;
  /** Ended periods that counted, most recent last (the last 50). */
  periods: DowntimePeriod[];
  /** The spell without a subscription going on now, if any. */
  current: { since: string; durationMs: number; reason: string; countsAsDowntime: boolean } | null;
  /** How often a working subscription was lost. */
  outages: number;
}

export type SubscriptionState = 'connecting' | 'subscribed' | 'waiting' | 'stopping' | 'stopped' | 'rejected' | 'exhausted' | 'expired';
export type SubscriptionOutcome = 'stopped' | 'rejected' | 'exhausted' | 'expired';

/** Read by `status`: where a subscription stands now. Field names are stable (JSON output). */
export interface SubscriptionStatus {
  subscriptionId: string;
  tenant: string;
  device: string;
  endpoint: string;
  topic: string;
  state: SubscriptionState;
  /** One sentence: what the subscription is doing. */
  summary: string;
  subscribedSince: string | null;
  /** Failed subscription attempts since the last working one (the backoff's attempt count). */
  attempts: number;
  /** Subscription attempts in all (each a run of the holding activity). */
  holds: number;
  nextAttemptAt: string | null;
  lastError: AttemptError | null;
  commands: CommandCounts;
  /** The last commands (most recent last), at most 20. */
  recentCommands: CommandRecord[];
  downtime: DowntimeReport;
}

/** What a finished subscription returns. */
export interface SubscriptionResult {
  subscriptionId: string;
  outcome: SubscriptionOutcome;
  reason: string;
  lastError: AttemptError | null;
  commands: CommandCounts;
  downtime: DowntimeReport;
}

/** A subscription's workflow id. */
export function subscriptionIdOf(tenant: string, device: string): string {
  return `subscription/${tenant}/${device}`;
}
