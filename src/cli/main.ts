#!/usr/bin/env node
import { Command } from 'commander';
import { registerBridge } from './bridge';
import { registerBundle } from './bundle';
import { registerCluster } from './cluster';
import { registerCodecServer } from './codec-server';
import { registerControls } from './controls';
import { registerDeadLetters } from './dead-letters';
import { registerDev } from './dev';
import { registerEndpoint } from './endpoint';
import { registerEndpointExport } from './endpoint-export';
import { registerEndpoints } from './endpoints';
import { registerList } from './list';
import { registerRedrive } from './redrive';
import { registerRelease } from './ordering';
import { registerResult } from './result';
import { registerSchedule } from './schedule';
import { registerServe } from './serve';
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
  registerRelease(program);
  registerEndpoints(program);
  registerEndpointExport(program);
  registerEndpoint(program);
  registerSchedule(program);
  registerSimulate(program);
  registerSubscribe(program);
  registerBridge(program);
  registerServe(program);
  registerCodecServer(program);
  registerBundle(program);
  registerCluster(program);
  return program;
}

if (require.main === module) {
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => fail(err));
}
