/**
 * A recorded outage beside its replay under a candidate policy and budget (`redeliver simulate
 * --from-endpoint … --plot`): requests per second, recorded and replayed, failure periods shaded.
 */
import { PALETTE, type Figure } from './figure';
import { shadedSpans, timeAxis, zeroFilled } from './endpoints';
import { formatDuration } from '../policy/duration';
import type { OutageRecording, RecordBucket } from '../endpoints/recording';
import type { OutageFigures } from '../simulate/outage-figures';

export interface OutageFigureInput {
  recording: OutageRecording;
  replayed: readonly RecordBucket[];
  figures: { recorded: OutageFigures; replayed: OutageFigures };
  /** The candidate in words, e.g. "full jitter, retry budget 10/s (burst 20)". */
  candidate: string;
  seed: number;
}

export function outageFigure({ recording, replayed, figures, candidate, seed }: OutageFigureInput): Figure {
  const periods = recording.periods.map((p): [number, number] => [Date.parse(p.from) / 1000, Date.parse(p.to) / 1000]);
  const xs = [...recording.seconds, ...replayed].map((b) => b.second).concat(periods.flat());
  const [lo, hi] = xs.length ? [Math.min(...xs), Math.max(...xs)] : [0, 1];
  const top = Math.max(1, ...recording.seconds.map((b) => b.requests), ...replayed.map((b) => b.requests));
  const { recorded, replayed: r } = figures;
  const row = (f: OutageFigures) =>
    `${f.requests.toLocaleString('en-US')} requests, ${f.requestsWhileDown.toLocaleString('en-US')} while down, peak ${f.peakAfterRecovery}/s after recovery, drained in ${formatDuration(f.drainSeconds * 1000)}, ${f.expired} expired, ${f.exhausted} exhausted`;
  return {
    title: `${recording.endpoint}: a recorded outage and its replay`,
    subtitle: [`Replayed: ${candidate}.`, `Recorded: ${row(recorded)}.`, `Replayed: ${row(r)}.`],
    panels: [
      {
        x: timeAxis(lo, hi),
        y: { label: 'requests to the endpoint per second', includeZero: true, integer: true },
        bands: shadedSpans(periods, lo, hi, top, { name: 'endpoint failing (recorded)', color: PALETTE[6] }),
        lines: [
          { name: 'recorded', color: PALETTE[0], points: zeroFilled(recording.seconds, (b) => b.requests) },
          { name: 'replayed', color: PALETTE[1], dashed: true, points: zeroFilled(replayed, (b) => b.requests) },
        ],
      },
    ],
    notes: [
      'The replay sends the recorded first attempts again at their times (each second spread evenly) to an endpoint that fails inside the recorded periods and answers otherwise;',
      `between attempts each delivery follows the candidate policy and retry budget, with the worker's own backoff and budget code, in virtual time (seed ${seed}).`,
      'Seconds without requests are drawn at 0; quiet hours (first attempts that got through, which no policy changes) are counted, not drawn.',
    ],
    panelWidth: 900,
    panelHeight: 420,
  };
}
