/**
 * The integration lane in two shards that run side by side, each a jest
 * process with its control plane of its own (so a test that reads the API
 * server's own counters still sees only its own shard's requests), then the
 * files that must run alone: the real node's (one real node at a time on a
 * machine: kubelet's ports, the host's iptables and sysctls) and those whose
 * controllers run on leases of seconds (the caller says which). Most integration files spend their
 * time waiting on members, controllers and looks, not on the CPU: two at a
 * time on two cores nearly halves the lane, and the tests assert order and
 * mechanism, not seconds, so the load does not fail them.
 *
 * Pure: the shards are balanced by a weight per file (the caller's: its size,
 * three times over for a file whose first line says it is slow).
 */
export interface IntegrationPlan {
  readonly shards: readonly [readonly string[], readonly string[]];
  /** Run after both shards, alone. */
  readonly alone: readonly string[];
}

export function planIntegration(files: readonly string[], weight: (file: string) => number, runsAlone: (file: string) => boolean): IntegrationPlan {
  const alone = files.filter(runsAlone);
  const shards: [string[], string[]] = [[], []];
  const load = [0, 0];
  // Heaviest first, each to the lighter shard: within 1 heaviest file of even.
  for (const file of files.filter((f) => !runsAlone(f)).sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
    const lighter = load[0] <= load[1] ? 0 : 1;
    shards[lighter].push(file);
    load[lighter] += weight(file);
  }
  return { shards: [shards[0].sort(), shards[1].sort()], alone };
}
