import { createServer, type Server } from 'node:net';
import { startDevServer } from '../../../src/dev/dev-server';
import { freePort } from '../../support/ports';

let squatter: Server;
afterAll(() => new Promise((resolve) => squatter?.close(resolve)));

test('a dev server whose port is taken fails at once, saying which port and what the server said', async () => {
  const port = await freePort();
  // another program on the port: it hangs up on whoever calls
  squatter = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
  const log: string[] = [];
  await expect(startDevServer({ port, uiPort: null, log: (line) => log.push(line) })).rejects.toThrow(
    `the Temporal dev server on port ${port} exited with code 1 while starting; it said: Error: can't set frontend port ${port}: listen tcp 127.0.0.1:${port}: bind: address already in use`,
  );
  // the caller's own port is not started again
  expect(log.filter((line) => line.includes('starting it again'))).toEqual([]);
}, 60_000);
