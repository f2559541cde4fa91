export { deliveryWorkflow, type DeliveryWorkflowInput } from './delivery';
export { commandSubscriptionWorkflow, type SubscriptionWorkflowInput } from './command-subscription';
export { endpointWorkflow, type EndpointWorkflowInput } from './endpoint';
export { batchWorkflow } from './batch';
export { orderingWorkflow, type OrderingWorkflowInput } from './ordering';
export { tenantEventsWorkflow, type TenantEventsInput } from './tenant-events';
