import type { DevServer } from '../../src/dev/dev-server';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __temporal?: DevServer }).__temporal?.stop();
}
