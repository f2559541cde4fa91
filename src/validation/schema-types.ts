/**
 * Compiles only when `A` is assignable to `B`. A type of the pure domain (which workflow code reads, and so
 * may not come from zod) and the schema that checks the same input are written apart: a check such as
 * `type _Checked = Assignable<z.output<typeof schema>, DomainType>` keeps them from drifting.
 */
export type Assignable<A extends B, B> = A;
