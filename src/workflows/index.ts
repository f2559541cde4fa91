export { deliveryWorkflow, type DeliveryWorkflowInput } from './delivery';
