#!/usr/bin/env node
// Runs before `npm start`, `npm test` and `npm run bench`: installs what each of the README's two commands needs on a
// fresh machine, so that each does all of its own set-up. Before one tier of the tests too: `test:unit`
// and `test:workflow` need no system package, `test:integration` the same ones as `npm test`.
//   - the npm dependencies, on a fresh clone or after package-lock.json changed: `npm install`, which
//     keeps to the lock file; not `npm ci`, which refuses a lock without the platform packages of
//     @swc/core for other systems, and registries that serve only this platform leave those out;
//   - with `--system a,b`: Debian packages whose programs the tests drive for real (chromium for the UI
//     test, mosquitto for the MQTT tests, maven to fetch the Java time-skipping test server, postgresql for
//     the cluster tests' Temporal cluster), with apt-get when they are missing; `npm run bench` asks for
//     redis-server, the Redis of its BullMQ comparison (bench/bullmq.ts), postgresql for its cluster, and
//     mosquitto for its MQTT bridge (bench/bridge.ts).
// The Temporal CLI is installed by the code that starts it (src/dev/temporal-cli.ts); the Temporal server the
// cluster runs is built from the Go module proxy by the code that starts it too (src/cluster/go-build.ts).
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const { existsSync, statSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const lock = path.join(root, 'package-lock.json');
const installed = path.join(root, 'node_modules', '.package-lock.json');

if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  console.error('installing npm dependencies (npm install, as locked) ...');
  const npm = process.env.npm_execpath;
  const [cmd, args] = npm ? [process.execPath, [npm]] : ['npm', []];
  execFileSync(cmd, [...args, 'install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
}

/**
 * Debian package → the program the project runs from it. No entry for `java`: Debian's maven depends on
 * default-jre-headless (OpenJDK 17 on bookworm), which the test server runs on.
 */
const PROGRAMS = { chromium: 'chromium', mosquitto: 'mosquitto', maven: 'mvn', postgresql: 'initdb' };
const i = process.argv.indexOf('--system');
const wanted = i >= 0 ? (process.argv[i + 1] || '').split(',').filter(Boolean) : [];
// Debian keeps PostgreSQL's server programs off the PATH, in /usr/lib/postgresql/<major>/bin
const found = (program) =>
  spawnSync('sh', ['-c', `command -v ${program} || test -x /usr/sbin/${program} || ls /usr/lib/postgresql/*/bin/${program}`]).status === 0;
const missing = wanted.filter((pkg) => !found(PROGRAMS[pkg] || pkg));
if (missing.length > 0) {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get']).status === 0;
  if (!apt) {
    console.error(`missing programs the tests need: ${missing.join(', ')} (install them with your package manager)`);
    process.exit(1);
  }
  console.error(`installing ${missing.join(', ')} with apt-get ...`);
  const aptGet = (...args) =>
    execFileSync(root ? 'apt-get' : 'sudo', root ? args : ['apt-get', ...args], {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  aptGet('update', '-qq');
  aptGet('install', '-y', '-qq', '--no-install-recommends', ...missing);
}
