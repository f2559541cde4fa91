import { exitedWhileStarting, PortClash } from '../../src/dev/dev-server';

// what `temporal server start-dev` 1.9.1 prints when a port it listens on is taken
const taken = (port: number) => `Error: can't set frontend port ${port}: listen tcp 127.0.0.1:${port}: bind: address already in use`;

test('a port the dev server picked itself, taken under it: a clash that a new start mends, quoting what the server said', () => {
  const err = exitedWhileStarting(1, [21444, 22444], taken(45761));
  expect(err).toBeInstanceOf(PortClash);
  expect(err.message).toContain('port 21444 exited with code 1 while starting');
  expect(err.message).toContain('127.0.0.1:45761: bind: address already in use');
});

test('the port the caller chose, frontend or UI, taken: an error to give up with, not a clash to start again', () => {
  for (const port of [21444, 22444]) {
    const err = exitedWhileStarting(1, [21444, 22444], taken(port));
    expect(err).not.toBeInstanceOf(PortClash);
    expect(err.message).toContain(`127.0.0.1:${port}: bind: address already in use`);
  }
  // a port that merely begins with the chosen one's digits is another port
  expect(exitedWhileStarting(1, [2144], taken(21444))).toBeInstanceOf(PortClash);
});

test('any other exit while starting is an error with the last of its output', () => {
  const err = exitedWhileStarting(3, [7233], 'unable to open database file');
  expect(err).not.toBeInstanceOf(PortClash);
  expect(err.message).toBe('the Temporal dev server on port 7233 exited with code 3 while starting; it said: unable to open database file');
  expect(exitedWhileStarting(1, [7233], '').message).toBe('the Temporal dev server on port 7233 exited with code 1 while starting');
});
