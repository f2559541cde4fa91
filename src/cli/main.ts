#!/usr/bin/env node
import { Command } from 'commander';
import { registerBundle } from './bundle';
import { registerCodecServer } from './codec-server';
import { registerControls } from './controls';
import { registerDeadLetters } from './dead-letters';
import { registerDev } from './dev';
import { registerEndpoints } from './endpoints';
import { registerList } from './list';
import { registerRedrive } from './redrive';
import { registerResult } from './result';
import { registerSchedule } from './schedule';
import { registerSimulate } from './simulate';
import { registerStatus } from './status';
import { registerSubscribe } from './subscribe';
import { registerSubmit } from './submit';
import { registerWatch } from './watch';
import { registerWorker } from './worker';
import { fail } from './output';

export function buildProgram(): Command {
  const program = new Command('redeliver')
    .description('Durable retry orchestrator for IoT message delivery on Temporal')
    .showHelpAfterError()
    .exitOverride();
  // one file per command (the four live controls share one)
  registerDev(program);
  registerWorker(program);
  registerSubmit(program);
  registerStatus(program);
  registerResult(program);
  registerWatch(program);
  registerList(program);
  registerControls(program);
  registerDeadLetters(program);
  registerRedrive(program);
  registerEndpoints(program);
  registerSchedule(program);
  registerSimulate(program);
  registerSubscribe(program);
  registerCodecServer(program);
  registerBundle(program);
  return program;
}

if (require.main === module) {
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => fail(err));
}
