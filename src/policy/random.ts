/**
 * A seeded source of uniform draws in [0, 1) (mulberry32), for previews, simulations and tests that
 * must repeat exactly. Workflows do not need it: Temporal seeds their Math.random itself.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
