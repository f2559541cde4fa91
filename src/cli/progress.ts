import { SingleBar, Presets } from 'cli-progress';

/** A progress bar on stderr for bulk work; on a non-terminal it prints one line at the end instead. */
export function progressBar(label: string, total: number): { update(done: number): void; stop(): void } {
  if (!process.stderr.isTTY) {
    let last = 0;
    return {
      update: (done) => (last = done),
      stop: () => process.stderr.write(`${label}: ${last}/${total}\n`),
    };
  }
  const bar = new SingleBar(
    { format: `${label} [{bar}] {value}/{total} {percentage}% | {eta_formatted} left`, stream: process.stderr, hideCursor: true },
    Presets.shades_classic,
  );
  bar.start(total, 0);
  return { update: (done) => bar.update(done), stop: () => bar.stop() };
}
