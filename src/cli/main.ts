#!/usr/bin/env node
import { Command } from 'commander';
import { registerDev } from './dev';
import { registerResult } from './result';
import { registerStatus } from './status';
import { registerSubmit } from './submit';
import { registerWorker } from './worker';
import { fail } from './output';

export function buildProgram(): Command {
  const program = new Command('redeliver')
    .description('Durable retry orchestrator for IoT message delivery on Temporal')
    .showHelpAfterError()
    .exitOverride();
  // one file per command
  registerDev(program);
  registerWorker(program);
  registerSubmit(program);
  registerStatus(program);
  registerResult(program);
  return program;
}

if (require.main === module) {
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => fail(err));
}
