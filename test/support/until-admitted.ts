/**
 * A CRD that reports Established is not yet usable by everyone: for a few
 * seconds more a create of its kind can still be refused, by kubectl or by
 * the API server, and which of them depends on the moment:
 *
 *   - kubectl maps the kind to a resource through discovery; until the
 *     group-version's resource list has it, kubectl says `resource mapping
 *     not found ... ensure CRDs are installed first` (a discovery cache of
 *     its own under ~/.kube/cache that lacks the kind is refetched once, so a
 *     stale cache is not the cause; the server's list is);
 *   - a MutatingAdmissionPolicy that matches the kind (the bundle's
 *     `--finalizer-policy`) needs the kind's schema, which kube-apiserver's
 *     policy plugin learns from its own /openapi/v3 list, polled every 5 s
 *     (k8s.io/apiserver .../policy/mutating/patch/typeconverter.go): until
 *     then every create is `ServiceUnavailable ... Resource kind
 *     example.com/v1beta1, Kind=DistributedKV not found. There can be a
 *     delay between when CustomResourceDefinitions are created and when they
 *     are available`. What `npm run demo` once met on its first run;
 *   - the kind's storage starts with its watch cache, and until that is
 *     ready a request is refused `storage is (re)initializing` (429): met
 *     where a CRD is created again soon after it was deleted.
 *
 * Neither is observable as a condition. What is: a server-side dry run of
 * the very objects about to be applied (`kubectl apply --dry-run=server`),
 * which goes through kubectl's mapping and the server's whole admission
 * chain and stores nothing. So wait until that passes, retrying only these
 * refusals: any other (a spec the API server rejects) is the caller's
 * problem at once, not after a deadline.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Runs kubectl with these arguments and returns its stdout; throws (with its stderr) when it exits non-zero, as execFileSync does. */
export type Kubectl = (...args: string[]) => string;

/** The refusals a CRD established a moment ago can still meet (see the header). */
const NOT_YET_SERVED = [
  /Resource kind [^\n]+? not found\. There can be a delay between when CustomResourceDefinitions are created and when they are available/,
  /resource mapping not found for name: .* ensure CRDs are installed first/,
  /no matches for kind /,
  /storage is \(re\)initializing/,
];

function output(e: unknown): string {
  const { stderr, message } = e as { stderr?: string | Buffer; message?: string };
  return `${stderr?.toString() ?? ''}${message ?? ''}`;
}

/**
 * Waits until `kubectl apply --dry-run=server` of `files` passes, and
 * returns the refusals met on the way (one line each; none when the kind was
 * served at once). Throws at once on any other failure, and after
 * `deadlineMs` if the kind is still not served.
 */
export async function untilAdmitted(kubectl: Kubectl, files: readonly string[], deadlineMs = 60_000, intervalMs = 250): Promise<string[]> {
  const refusals: string[] = [];
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      kubectl('apply', '--dry-run=server', ...files.flatMap((f) => ['-f', f]));
      return refusals;
    } catch (e) {
      const text = output(e);
      const refusal = NOT_YET_SERVED.find((pattern) => pattern.test(text));
      if (!refusal) throw e;
      refusals.push(refusal.exec(text)![0]);
      if (Date.now() > deadline) throw new Error(`still refused after ${deadlineMs} ms: ${text}`, { cause: e });
      await sleep(intervalMs);
    }
  }
}
