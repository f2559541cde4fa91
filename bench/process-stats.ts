import type { WorkerStats } from './harness';

/**
 * Answers the parent's 'stats' messages with this process's CPU time, RSS and peak RSS (sampled every
 * 100 ms, so that a short peak between two requests is not missed): what a benchmark worker reports.
 */
export function answerStats(): void {
  let peakRss = process.memoryUsage().rss;
  setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100).unref();
  process.on('message', (msg) => {
    if (msg === 'stats') process.send?.(statsNow());
  });
  function statsNow(): WorkerStats {
    const cpu = process.cpuUsage();
    const rss = process.memoryUsage().rss;
    peakRss = Math.max(peakRss, rss);
    return { cpuMs: (cpu.user + cpu.system) / 1000, rss, peakRss };
  }
}
