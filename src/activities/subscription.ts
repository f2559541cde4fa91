import { isUtf8 } from 'node:buffer';
import { CancelledFailure, Context, type ApplicationFailure } from '@temporalio/activity';
import { request, type Dispatcher } from 'undici';
import { classify, type Classification, type TransportOutcome } from '../classify';
import type { Delivery } from '../delivery/types';
import { InvalidInputError } from '../errors';
import { commandStatusOf, parseCommandTopic } from '../subscription/command';
import type { CommandSubscription, ReceivedCommand } from '../subscription/types';
import { responseDelivery } from '../validation/subscription';
import { attemptDeadline } from '../transports/deadline';
import { outcomeOfError as httpOutcome } from '../transports/http';
import type { MqttClient } from 'mqtt';
import { outcomeOfError as mqttOutcome, type MqttEndpoint, type MqttPool } from '../transports/mqtt';
import {
  attemptFailure,
  commandReceivedSignal,
  subscribedSignal,
  type HandOff,
  type HoldEnd,
  type HoldFailureDetails,
  type HoldHeartbeat,
  type HoldOptions,
} from '../contract';

/**
 * How long the broker keeps a subscription's session (and queues its QoS 1 commands) after the holding
 * connection drops (MQTT 5; an MQTT 3.1.1 broker keeps it as configured): longer than any backoff wait.
 */
export const SESSION_EXPIRY_SECONDS = 3600;
/** The holding activity reports it is alive this often (Temporal throttles what it sends). */
const HEARTBEAT_MS = 5_000;
/** Largest callback answer taken as a command's response: a delivery's own payload limit. */
const MAX_RESPONSE_BYTES = 256 * 1024;
const ERROR_DETAIL_BYTES = 512;

export function brokerEndpoint(sub: CommandSubscription): MqttEndpoint {
  const { url, protocolVersion, credential, tls } = sub.broker;
  return { url, protocolVersion, credential, tenant: sub.tenant, tls };
}

/** The message id a command carries to the callback: its request id, else its number in the subscription. */
export function commandMessageId(
  sub: Pick<CommandSubscription, 'subscriptionId'>,
  command: Pick<ReceivedCommand, 'requestId' | 'seq'>,
): string {
  return command.requestId ?? `${sub.subscriptionId}#${command.seq}`;
}

export function createSubscriptionActivities(deps: { http: Dispatcher; mqtt: MqttPool }) {
  return {
    /**
     * Holds a device's command subscription: connects with the subscription's own client id and a
     * session that outlives a dropped connection, subscribes at QoS 1, signals the workflow once
     * subscribed and for each command (acknowledging it to the broker only once the workflow has it), and
     * heartbeats. Returns after `holdForMs`; fails, classified, when connecting or subscribing fails or
     * the connection drops; the workflow resubscribes with its backoff. Never reconnects by itself.
     */
    holdSubscription(sub: CommandSubscription, options: HoldOptions): Promise<HoldEnd> {
      return hold(deps.mqtt, sub, options);
    },

    /**
     * Hands one command to the callback (an HTTP POST of its payload), classified like a delivery attempt;
     * for a two-way command, the callback's answer becomes the command's response delivery.
     */
    async handCommand(sub: CommandSubscription, command: ReceivedCommand, attempt: number): Promise<HandOff> {
      const started = performance.now();
      // a command that could not be answered must not run: refused before the callback sees it
      const unanswerable = responseProblems(sub, command);
      if (unanswerable) throw failureOf(invalidCommand(command, unanswerable), performance.now() - started);
      const headers: Record<string, string> = {
        ...sub.callback.headers,
        'content-type': command.contentType ?? (command.encoding === 'utf8' ? 'text/plain; charset=utf-8' : 'application/octet-stream'),
        // the request id (checked above) or the subscription's id and a number: header-safe as they are
        'message-id': commandMessageId(sub, command),
        'delivery-attempt': String(attempt),
        'command-name': headerText(command.name),
        'command-topic': headerText(command.topic),
        tenant: sub.tenant,
        device: sub.device,
        ...(command.requestId !== null && { 'command-request-id': command.requestId }),
      };
      // the timeout bounds the whole call, body included, as it bounds a delivery's attempt (sendHttp)
      const deadline = attemptDeadline(sub.callback.timeout);
      let outcome: TransportOutcome;
      let answer: { body: string; headers: Record<string, string | string[] | undefined>; status: number } | undefined;
      try {
        const payload = command.encoding === 'base64' ? Buffer.from(command.payload, 'base64') : command.payload;
        answer = await deadline.race(postCommand(sub.callback.url, headers, payload, deps.http, deadline.signal));
        const { status, body } = answer;
        outcome = {
          kind: 'http',
          status,
          headers: answer.headers,
          ...(status >= 400 && body && { detail: body.slice(0, ERROR_DETAIL_BYTES) }),
        };
      } catch (err) {
        outcome = httpOutcome(err, sub.callback.timeout, deadline.signal.aborted);
      } finally {
        deadline.clear();
      }
      const durationMs = performance.now() - started;
      const c = classify(outcome);
      if (c.class !== 'success' || !answer) throw failureOf(c, durationMs);
      let response: Delivery | null = null;
      if (command.requestId !== null) {
        const status = commandStatusOf(answer.headers['command-status']) ?? answer.status;
        const contentType = answer.headers['content-type'];
        try {
          response = responseDelivery(sub, {
            requestId: command.requestId,
            status,
            payload: answer.body,
            contentType: Array.isArray(contentType) ? contentType[0] : contentType,
          });
        } catch (err) {
          if (!(err instanceof InvalidInputError)) throw err;
          throw failureOf(
            {
              class: 'client',
              retryable: false,
              code: 'invalid-response',
              reason: `the callback's answer cannot go out as the command's response: ${err.problems.map((p) => `${p.field} ${p.message}`).join('; ')}`,
            },
            durationMs,
          );
        }
      }
      return { code: c.code, reason: c.reason, durationMs, httpStatus: answer.status, response };
    },

    /**
     * Ends the subscription for good: connects with its client id and a clean start, which makes the
     * broker drop its session (subscription and queued commands) and any connection still holding it.
     */
    async releaseSubscription(sub: CommandSubscription): Promise<void> {
      const started = performance.now();
      const connected = await deps.mqtt.connectDedicated(brokerEndpoint(sub), {
        clientId: sub.broker.clientId,
        clean: true,
        sessionExpirySeconds: 0,
        timeoutMs: sub.broker.timeout,
      });
      if (!connected.ok) throw failureOf(classify(connected.outcome), performance.now() - started);
      await new Promise<void>((resolve) => connected.client.end(false, {}, () => resolve()));
    },
  };
}

/** holdSubscription (above): one connection and its subscription, until the hold ends or fails. */
async function hold(mqtt: MqttPool, sub: CommandSubscription, options: HoldOptions): Promise<HoldEnd> {
  const ctx = Context.current();
  const workflow = ctx.client.workflow.getHandle(options.workflowId);
  const v5 = sub.broker.protocolVersion === '5';
  const started = performance.now();
  let subscribedAt: number | null = null;
  // a failure before the hold below is wired up is kept for it
  let early: Classification | undefined;
  let fail: (c: Classification) => void = (c) => {
    early ??= c;
  };

  // mqtt.js sends a QoS 1 command's PUBACK once this calls back: only after the workflow recorded it,
  // so a command is never lost between the broker and the workflow (the broker resends it otherwise).
  // Installed before connecting: a resumed session's queued commands come right after the CONNACK.
  const handleMessage: MqttClient['handleMessage'] = (packet, done) => {
    const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
    const text = isUtf8(payload);
    const { requestId, name } = parseCommandTopic(packet.topic);
    const command: Omit<ReceivedCommand, 'seq'> = {
      topic: packet.topic,
      requestId,
      name,
      payload: payload.toString(text ? 'utf8' : 'base64'),
      encoding: text ? 'utf8' : 'base64',
      contentType: packet.properties?.contentType ?? null,
      receivedAt: Date.now(),
    };
    workflow.signal(commandReceivedSignal, { hold: options.hold, command }).then(
      () => done(),
      (err: unknown) => {
        done(err as Error);
        fail(internal(`a received command could not be recorded in the workflow: ${(err as Error).message}`));
      },
    );
  };
  const connected = await mqtt.connectDedicated(brokerEndpoint(sub), {
    clientId: sub.broker.clientId,
    clean: false,
    sessionExpirySeconds: SESSION_EXPIRY_SECONDS,
    timeoutMs: sub.broker.timeout,
    handleMessage,
  });
  if (!connected.ok) throw holdFailure(classify(connected.outcome), started, null);
  const client = connected.client;

  return new Promise<HoldEnd>((resolve, reject) => {
    let ended = false;
    let ending: TransportOutcome | undefined;
    const end = (result: { ok: HoldEnd } | { err: unknown }) => {
      if (ended) return;
      ended = true;
      clearInterval(beat);
      clearTimeout(rotation);
      clearTimeout(subackTimer);
      // a planned end says goodbye (the session stays, for the next hold); a failed one just closes
      client.end(!('ok' in result) || !client.connected);
      if ('ok' in result) resolve(result.ok);
      else reject(result.err);
    };
    const lost = (c: Classification) => end({ err: holdFailure(c, started, subscribedAt) });
    fail = lost;

    client.on('packetreceive', (packet) => {
      if (packet.cmd !== 'disconnect') return;
      const props = packet.properties;
      ending = {
        kind: 'mqtt5',
        packet: 'disconnect',
        reasonCode: packet.reasonCode ?? 0,
        ...(props?.reasonString && { reasonString: props.reasonString }),
        ...(props?.serverReference && { serverReference: props.serverReference }),
      };
    });
    client.on('error', (err) => {
      ending ??= mqttOutcome(err, v5, 'disconnect', 0);
    });
    client.once('close', () => lost(classify(ending ?? { kind: 'mqtt-closed', message: 'the connection to the broker closed' })));

    const subackTimer = setTimeout(() => lost(classify({ kind: 'timeout', afterMs: sub.broker.timeout })), sub.broker.timeout);
    client.subscribe(sub.broker.topic, { qos: 1 }, (err, _granted, packet) => {
      clearTimeout(subackTimer);
      if (ended) return;
      const code = (packet?.granted as number[] | undefined)?.[0];
      if (typeof code === 'number' && code >= 0x80) {
        const reasonString = packet?.properties?.reasonString;
        return lost(classify({ kind: 'mqtt5', packet: 'suback', reasonCode: code, ...(reasonString && { reasonString }) }));
      }
      if (err) return lost(classify(mqttOutcome(err, v5, 'suback', sub.broker.timeout)));
      subscribedAt = Date.now();
      ctx.heartbeat({ at: subscribedAt, subscribedAt } satisfies HoldHeartbeat);
      workflow
        .signal(subscribedSignal, { hold: options.hold, at: subscribedAt })
        .catch((e: unknown) => lost(internal(`could not tell the workflow: ${(e as Error).message}`)));
    });

    const beat = setInterval(() => ctx.heartbeat({ at: Date.now(), subscribedAt } satisfies HoldHeartbeat), HEARTBEAT_MS);
    const rotation = setTimeout(() => end({ ok: { at: Date.now() } }), options.holdForMs);
    ctx.cancelled.catch((reason: unknown) => end({ err: handedBack(reason, started, subscribedAt) }));
    if (early) lost(early);
    else if (!client.connected) lost(classify(ending ?? { kind: 'mqtt-closed', message: 'the connection to the broker closed' }));
  });
}

/**
 * Text from a topic as an HTTP header value: every UTF-8 byte outside printable ASCII, and `%` itself, as
 * `%XX` (RFC 3986 percent-encoding: `decodeURIComponent` gives the text back). A header cannot carry line
 * breaks or characters beyond Latin-1, and a receiver should not have to guess the charset of the rest.
 */
export function headerText(text: string): string {
  const hex = (b: number) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return text.replace(/[^\x21-\x24\x26-\x7e]+/g, (run) => Array.from(Buffer.from(run, 'utf8'), hex).join(''));
}

/**
 * Why a two-way command's response could not go out (its request id becomes the response's message id and
 * topic level): the check the answer will pass, made with an empty answer before the callback is called.
 */
function responseProblems(sub: CommandSubscription, command: ReceivedCommand): string | undefined {
  if (command.requestId === null) return undefined;
  try {
    responseDelivery(sub, { requestId: command.requestId, status: 200, payload: '', contentType: undefined });
    return undefined;
  } catch (err) {
    if (!(err instanceof InvalidInputError)) throw err;
    return err.problems.map((p) => `${p.field} ${p.message}`).join('; ');
  }
}

function invalidCommand(command: ReceivedCommand, problems: string): Classification {
  const reason = `the command's request id ${JSON.stringify(command.requestId)} could not be answered, so it was not handed to the callback: ${problems}`;
  return { class: 'client', retryable: false, code: 'invalid-command', reason };
}

function failureOf(c: Classification, durationMs: number): ApplicationFailure {
  return attemptFailure({ ...c, durationMs });
}

function holdFailure(c: Classification, started: number, subscribedAt: number | null): ApplicationFailure {
  const details: HoldFailureDetails = { ...c, durationMs: performance.now() - started, lostAt: Date.now(), subscribedAt };
  return attemptFailure(details);
}

function internal(reason: string): Classification {
  return { class: 'server', retryable: true, code: 'internal-error', reason };
}

/**
 * A worker shutting down cancels the hold: that is a lost subscription (resubscribed by another worker
 * after the backoff), not the workflow's cancellation. Any other cancellation stays one.
 */
function handedBack(reason: unknown, started: number, subscribedAt: number | null): Error {
  if (!(reason instanceof CancelledFailure) || reason.message !== 'WORKER_SHUTDOWN')
    return reason instanceof Error ? reason : new CancelledFailure(String(reason));
  return holdFailure(
    {
      class: 'connection',
      retryable: true,
      code: 'worker-shutdown',
      reason: 'the worker holding the subscription shut down; it is resubscribed',
    },
    started,
    subscribedAt,
  );
}

/** One POST of a command to the callback, and its answer (the body up to one byte over the limit). */
async function postCommand(
  url: string,
  headers: Record<string, string>,
  body: string | Buffer,
  dispatcher: Dispatcher,
  signal: AbortSignal,
) {
  const res = await request(url, { method: 'POST', headers, body, dispatcher, signal });
  return { body: await readUpTo(res.body, MAX_RESPONSE_BYTES + 1), headers: res.headers, status: res.statusCode };
}

/** The body as text, at most `limit` bytes of it (the rest is read and dropped, so the connection can be reused). */
async function readUpTo(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const kept: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    if (size < limit) kept.push(chunk.subarray(0, limit - size));
    size += chunk.length;
  }
  return Buffer.concat(kept).toString('utf8');
}
