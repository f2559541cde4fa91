import type { MessageKind } from '../policy/types';

/*
 * Deadline-first (docs/endpoint-health.md, "Deadline-first"): when an endpoint's limits make its slots scarce,
 * command responses (each with a deadline: the command's, or 5 min) go before events, events before telemetry.
 * Pure: the endpoint settings that name it are validated in workflow code too.
 */

/** How an endpoint's scarce slots are shared: by urgency (the default), or in arrival order as before. */
export type Priority = 'deadline-first' | 'fifo';

export const DEFAULT_PRIORITY: Priority = 'deadline-first';
export const PRIORITIES: readonly Priority[] = ['deadline-first', 'fifo'];

/** Ranks there are: 0 goes first. */
export const RANKS = 3;

const RANK: Record<MessageKind, number> = { 'command-response': 0, event: 1, telemetry: 2 };

/** Where an attempt of `kind` queues for a slot: under `fifo`, or with no kind known, all alike. */
export function rankOf(kind: MessageKind | undefined, priority: Priority | undefined): number {
  return kind === undefined || priority === 'fifo' ? 0 : RANK[kind];
}

/** The most urgent of several kinds (one request carrying many messages queues as its most urgent). */
export function mostUrgent(kinds: readonly MessageKind[]): MessageKind | undefined {
  return [...kinds].sort((a, b) => RANK[a] - RANK[b])[0];
}

/** A cell: `taken` unless it fell after the asker's `notAfter` (its expiry), which then spends none. */
export interface Cell {
  at: number;
  taken: boolean;
}

/**
 * Cells `interval` apart handed out per rank: a rank sees the cells taken by itself and the ranks before it,
 * never those of the ranks after it, so a command response that comes late still gets a cell ahead of the
 * telemetry that took its cells earlier. Each cell it takes pushes every later rank's next cell back by one,
 * leaving a gap at the end of that rank's cells for the one it displaced: that one, when it comes back and
 * yields its cell (EndpointAdmission), takes the gap (`displaced`); or, queueing for the next cell
 * where the attempts come for theirs, moves those of its rank after it one cell on, into the gap. With one
 * rank it is a plain cell rate with no burst (the budget's GCRA, RetryBudget).
 */
export class RankedCells {
  /** The next free cell of each rank (epoch ms). */
  private readonly next: number[] = Array.from({ length: RANKS }, () => -Infinity);
  /** Cells left for displaced attempts of each rank, in order. */
  private readonly gaps: number[][] = Array.from({ length: RANKS }, () => []);

  take(rank: number, now: number, interval: number, notAfter = Infinity, displaced = false): Cell {
    const gaps = this.gaps[rank]!;
    while (gaps.length > 0 && gaps[0]! < now) gaps.shift();
    const at = displaced && gaps.length > 0 ? gaps[0]! : Math.max(now, this.next[rank]!);
    if (at > notAfter) return { at, taken: false };
    if (displaced && gaps[0] === at) {
      gaps.shift();
      return { at, taken: true };
    }
    this.next[rank] = at + interval;
    for (let r = rank + 1; r < RANKS; r++) {
      if (this.next[r]! > at) this.gaps[r]!.push(this.next[r]!);
      this.next[r] = Math.max(this.next[r]!, at) + interval;
    }
    return { at, taken: true };
  }
}
