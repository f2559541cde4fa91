import type { Workflows } from '../contract';
import { deliveryWorkflow } from './delivery';
import { commandSubscriptionWorkflow } from './command-subscription';
import { endpointWorkflow } from './endpoint';
import { batchWorkflow } from './batch';
import { orderingWorkflow } from './ordering';
import { tenantEventsWorkflow } from './tenant-events';
import { holdWorkflow } from './hold';

export {
  deliveryWorkflow,
  commandSubscriptionWorkflow,
  endpointWorkflow,
  batchWorkflow,
  orderingWorkflow,
  tenantEventsWorkflow,
  holdWorkflow,
};

// the compiler holds each workflow to the signature the contract gives its starters (type-only: nothing in the bundle)
type Registered<W extends Workflows> = W;
export type Checked = Registered<{
  deliveryWorkflow: typeof deliveryWorkflow;
  commandSubscriptionWorkflow: typeof commandSubscriptionWorkflow;
  endpointWorkflow: typeof endpointWorkflow;
  batchWorkflow: typeof batchWorkflow;
  orderingWorkflow: typeof orderingWorkflow;
  tenantEventsWorkflow: typeof tenantEventsWorkflow;
  holdWorkflow: typeof holdWorkflow;
}>;
