/**
 * Whether a parsed JSON value nests deeper than `max`. Iterative on purpose: the bodies it guards (tokenize,
 * detokenize) are walked recursively afterwards, and a deep enough body would otherwise overflow the stack.
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    if (depth >= max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}
