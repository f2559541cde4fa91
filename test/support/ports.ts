/**
 * Tests take their servers' ports below the kernel's ephemeral range: the many outgoing connections of a full
 * run, and the dev servers' own port-0 picks, cannot take one between its pick and its listen.
 */
export { freeServerPort as freePort } from '../../src/dev/ports';
