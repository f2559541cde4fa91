/**
 * Events in virtual time, earliest first; events at the same instant leave in the order they were
 * scheduled, so a run is a pure function of its random draws.
 */
export class EventQueue<T> {
  private readonly heap: { at: number; seq: number; event: T }[] = [];
  private seq = 0;

  get size(): number {
    return this.heap.length;
  }

  push(at: number, event: T): void {
    const heap = this.heap;
    heap.push({ at, seq: this.seq++, event });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  /** The earliest event and its time; undefined when none is left. */
  pop(): { at: number; event: T } | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined) return undefined;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let first = i;
        if (left < heap.length && this.before(left, first)) first = left;
        if (right < heap.length && this.before(right, first)) first = right;
        if (first === i) break;
        [heap[i], heap[first]] = [heap[first]!, heap[i]!];
        i = first;
      }
    }
    return { at: top.at, event: top.event };
  }

  private before(a: number, b: number): boolean {
    const x = this.heap[a]!;
    const y = this.heap[b]!;
    return x.at < y.at || (x.at === y.at && x.seq < y.seq);
  }
}
