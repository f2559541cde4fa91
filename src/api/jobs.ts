import { randomUUID } from 'node:crypto';
import type { Redeliver, RedriveReport } from '../client/index';
import type { DeliveryFilter } from '../delivery/filter';
import type { ApiKey } from './keys';

/** A bulk redrive as `GET /v1/redrives/{jobId}` shows it. */
export interface RedriveJob extends RedriveReport {
  jobId: string;
  state: 'running' | 'done' | 'stopped';
  startedAt: string;
  finishedAt: string | null;
  total: number | null;
  done: number;
}

interface Entry {
  job: RedriveJob;
  /** Who may see it: the tenants of the key that started it. */
  scope: ApiKey['tenants'];
  stop: AbortController;
  finished: Promise<void>;
}

/** Finished jobs are kept this long, and at most this many: a poller has time to read the end. */
const KEEP_MS = 60 * 60_000;
const KEEP_MAX = 1000;

/**
 * Bulk redrives running in this process (Redeliver.redriveAll), by job id. They live in memory only: a restart
 * forgets them (polling then answers 404) and stops those running, and starting the same redrive again is safe,
 * since a dead letter is redriven once whoever asks (`alreadyRedriven` counts what an earlier job did).
 */
export class RedriveJobs {
  private readonly jobs = new Map<string, Entry>();

  constructor(private readonly redeliver: Redeliver) {}

  start(filter: DeliveryFilter, scope: ApiKey['tenants'], concurrency?: number): RedriveJob {
    this.forgetOld();
    const job: RedriveJob = {
      jobId: randomUUID(),
      state: 'running',
      startedAt: new Date().toISOString(),
      finishedAt: null,
      total: null,
      done: 0,
      redriven: [],
      alreadyRedriven: [],
      failed: [],
    };
    const stop = new AbortController();
    const onProgress = (done: number, total: number) => Object.assign(job, { done, total });
    const finished = this.redeliver
      .redriveAll(filter as Parameters<Redeliver['redriveAll']>[0], {
        ...(concurrency && { concurrency }),
        onProgress,
        signal: stop.signal,
      })
      .then(
        (report) => Object.assign(job, report, { total: job.total ?? 0 }),
        (err: unknown) => job.failed.push({ deliveryId: '(listing)', error: err instanceof Error ? err.message : String(err) }),
      )
      .then(() => Object.assign(job, { state: stop.signal.aborted ? 'stopped' : 'done', finishedAt: new Date().toISOString() }))
      .then(() => undefined);
    this.jobs.set(job.jobId, { job, scope, stop, finished });
    return job;
  }

  /** The job, if there is one of that id that `scope` may see. */
  get(jobId: string, maySee: (scope: ApiKey['tenants']) => boolean): RedriveJob | undefined {
    const entry = this.jobs.get(jobId);
    return entry && maySee(entry.scope) ? entry.job : undefined;
  }

  /** Stops every running job: the redrives in flight finish, no other starts. */
  async stop(): Promise<void> {
    for (const entry of this.jobs.values()) entry.stop.abort();
    await Promise.all([...this.jobs.values()].map((e) => e.finished));
  }

  private forgetOld(): void {
    const now = Date.now();
    for (const [id, { job }] of this.jobs) {
      const ended = job.finishedAt ? Date.parse(job.finishedAt) : undefined;
      if (ended !== undefined && (now - ended > KEEP_MS || this.jobs.size > KEEP_MAX)) this.jobs.delete(id);
    }
  }
}
