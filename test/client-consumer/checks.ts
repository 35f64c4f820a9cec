/** true when A and B are the same type; a `const x: Equal<…> = true` does not compile otherwise. */
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
