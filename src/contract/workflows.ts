import type { BatchWorkflow } from './batch';
import type { DeliveryWorkflow } from './delivery';
import type { HoldWorkflow } from './hold';
import type { EndpointWorkflow, TenantEventsWorkflow } from './endpoint';
import type { OrderingWorkflow } from './ordering';
import type { CommandSubscriptionWorkflow } from './subscription';

/**
 * Every workflow the worker registers, by its type name, with the signature the client and the activities start
 * it by (they import this, not the workflow code). The workflows' index is checked against it.
 */
export interface Workflows {
  deliveryWorkflow: DeliveryWorkflow;
  commandSubscriptionWorkflow: CommandSubscriptionWorkflow;
  endpointWorkflow: EndpointWorkflow;
  batchWorkflow: BatchWorkflow;
  orderingWorkflow: OrderingWorkflow;
  tenantEventsWorkflow: TenantEventsWorkflow;
  holdWorkflow: HoldWorkflow;
}
