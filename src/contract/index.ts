/*
 * The contract between the client, the workflows and the activities (CONTRIBUTING.md, "The contract"): what
 * each side may rely on of the others. Pure: it imports only the pure domain and Temporal's definition helpers,
 * so that workflow code, activities and the client all import it and never each other.
 */
export * from './activity-signatures';
export * from './attempts';
export * from './batch';
export * from './definitions';
export * from './delivery';
export * from './endpoint';
export * from './failures';
export * from './hold';
export * from './ids';
export * from './ordering';
export * from './search-attributes';
export * from './start-options';
export * from './subscription';
export * from './workflows';
