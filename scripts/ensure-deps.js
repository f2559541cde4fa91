#!/usr/bin/env node
// Runs before `npm start` and `npm test`: installs the npm dependencies on a fresh clone (or after
// package-lock.json changed), so that each of the README's two commands does all of its own set-up.
'use strict';
const { execFileSync } = require('node:child_process');
const { existsSync, statSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const lock = path.join(root, 'package-lock.json');
const installed = path.join(root, 'node_modules', '.package-lock.json');

if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  console.error('installing npm dependencies (npm ci) ...');
  const npm = process.env.npm_execpath;
  const [cmd, args] = npm ? [process.execPath, [npm]] : ['npm', []];
  execFileSync(cmd, [...args, 'ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
}
