/**
 * The real-node demo's CPU arithmetic (scripts/demo-node.ts): the examples
 * ask 500m a member, sized for real nodes, while the demo's one node has
 * this machine's cores. The scheduler and the kubelet both refuse a pod
 * whose requests do not fit the node's allocatable CPU, so the demo lowers
 * each member's request to a share that fits.
 */

/** Millicores of a Kubernetes CPU quantity: `2`, `1.5`, `500m`. */
export function parseCpu(quantity: string | number): number {
  const text = String(quantity).trim();
  const m = /^(\d+(?:\.\d+)?)(m?)$/.exec(text);
  if (!m) throw new Error(`not a CPU quantity: ${JSON.stringify(quantity)}`);
  return m[2] ? Math.round(Number(m[1])) : Math.round(Number(m[1]) * 1000);
}

/**
 * Each member's CPU request so that `members` of them fit beside what is
 * reserved, with a tenth of the node left over (whatever else the node runs),
 * rounded down to 10m; never below 10m.
 */
export function memberCpuRequest(o: { allocatableMillis: number; reservedMillis: number; members: number }): number {
  const free = o.allocatableMillis * 0.9 - o.reservedMillis;
  return Math.max(10, Math.floor(free / o.members / 10) * 10);
}
