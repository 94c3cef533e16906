/**
 * The storage-growth step of a reconcile (engines/storage-growth.ts decides):
 * reads the live StatefulSet's volume template, its claims and their
 * StorageClass, only when the spec's size differs from the template's; says
 * the step's one write (grow a claim, or replace the StatefulSet leaving its
 * pods running), which the core makes; and says what the StatefulSet to
 * write looks like meanwhile (its current volume template, which cannot
 * change in place).
 */
import { decideStorageStep, type Claim, type StorageInput, type StorageStep } from '../../engines/storage-growth.js';
import { KubeApiError, resourcePath, type KubeClient } from '../../kube/client.js';
import type { CachedObject } from '../../kube/informer.js';
import { withDesiredHash } from '../../model/desired-hash.js';
import type { KubeObject } from '../../model/kube-object.js';
import { quantityValue } from '../../model/quantity.js';
import { controllingOwner } from '../core/ownership.js';
import { readMemberPods } from './member-pods.js';

interface ClaimTemplate { metadata?: { name?: string }; spec?: { storageClassName?: string; resources?: { requests?: { storage?: string } } } }

const templateOf = (statefulSet: unknown): ClaimTemplate | undefined => (statefulSet as { spec?: { volumeClaimTemplates?: ClaimTemplate[] } }).spec?.volumeClaimTemplates?.[0];

/**
 * The size of the members' volumes as the live StatefulSet's volume template
 * says: what they hold until the step replaces it. Rendering with it
 * (synthesizeCluster's volumeSizeNow) keeps the members' derived quota to
 * the volumes they have; once the StatefulSet is replaced, the next render
 * has none to read and takes the spec's size, and the new pod template (the
 * raised quota) reaches the adopted pods as an upgrade does: one member at a
 * time (membership-step.ts).
 */
export function volumeSizeOf(statefulSet: CachedObject | undefined): string | undefined {
  return statefulSet ? templateOf(statefulSet)?.spec?.resources?.requests?.storage : undefined;
}

/** The step's one write, for the core to make (execute-writes.ts). */
export type StorageWrite =
  /** Grow one claim to the spec's size. */
  | { readonly kind: 'resizeClaim'; readonly namespace: string; readonly claim: string; readonly size: string }
  /** Delete the StatefulSet, leaving its pods running (orphaned), only the one judged (its uid). */
  | { readonly kind: 'replaceStatefulSet'; readonly namespace: string; readonly name: string; readonly uid: string };

export interface StorageStepResult {
  readonly step: StorageStep;
  /** The StatefulSet to write this time: the desired one, or it with the live volume template while the claims grow. */
  readonly statefulSet: KubeObject;
  /** The write the step asks for (none in detect-only mode). */
  readonly write?: StorageWrite;
  /** That write, in words (for an Event). */
  readonly changed?: string;
  readonly requeueAfterMs?: number;
}

interface ClaimObject { metadata: { name: string }; spec?: { resources?: { requests?: { storage?: string } } }; status?: { capacity?: { storage?: string } } }

/** What the step reads, fresh from the API server, only when the spec's size differs from the template's. */
export interface StorageReader {
  /** A claim by name, or undefined when there is none. */
  claim(namespace: string, name: string): Promise<ClaimObject | undefined>;
  /** The StorageClass a claim template uses: its own, or the cluster's default. */
  storageClass(name: string | undefined): Promise<{ name: string; allowVolumeExpansion: boolean } | undefined>;
  /** The member pods (`<name>-<ordinal>`) of a StatefulSet, by its selector. */
  memberPods(namespace: string, selector: Readonly<Record<string, string>>, statefulSetName: string): Promise<readonly CachedObject[]>;
}

async function getOrUndefined<T>(client: KubeClient, path: string): Promise<T | undefined> {
  try {
    return await client.request<T>('GET', path);
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return undefined;
    throw e;
  }
}

/** The reader against the API server. */
export function storageReader(client: KubeClient): StorageReader {
  return {
    claim: (namespace, name) => getOrUndefined<ClaimObject>(client, resourcePath('v1', 'PersistentVolumeClaim', namespace, name)),
    async storageClass(name) {
      type StorageClass = { metadata: { name: string; annotations?: Record<string, string> }; allowVolumeExpansion?: boolean };
      const found = name
        ? await getOrUndefined<StorageClass>(client, `/apis/storage.k8s.io/v1/storageclasses/${encodeURIComponent(name)}`)
        : (await client.request<{ items: StorageClass[] }>('GET', '/apis/storage.k8s.io/v1/storageclasses')).items
          .find((c) => c.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'] === 'true');
      return found ? { name: found.metadata.name, allowVolumeExpansion: found.allowVolumeExpansion === true } : undefined;
    },
    memberPods: (namespace, selector, statefulSetName) => readMemberPods(client, namespace, selector, statefulSetName),
  };
}

/**
 * The member pods (`<name>-<ordinal>`, read fresh) that the live StatefulSet
 * does not control: the replacement waits for it to adopt them (engines/storage-growth.ts).
 */
async function podsNotAdopted(read: StorageReader, live: CachedObject, replicas: number): Promise<string[]> {
  const matchLabels = (live.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector?.matchLabels ?? {};
  const members = new Set(Array.from({ length: replicas }, (_, i) => `${live.metadata.name}-${i}`));
  return (await read.memberPods(live.metadata.namespace!, matchLabels, live.metadata.name))
    .filter((p) => members.has(p.metadata.name) && !p.metadata.deletionTimestamp && controllingOwner(p)?.uid !== live.metadata.uid)
    .map((p) => p.metadata.name)
    .sort();
}

export async function storageStep(
  read: StorageReader, cr: CachedObject, desired: KubeObject, live: CachedObject | undefined, detectOnly: boolean, hashAnnotation: string,
): Promise<StorageStepResult> {
  const unchanged: StorageStepResult = { step: { kind: 'unchanged' }, statefulSet: desired };
  if (!live || controllingOwner(live)?.uid !== cr.metadata.uid) return unchanged;
  const wanted = templateOf(desired);
  const current = templateOf(live);
  const desiredSize = wanted?.spec?.resources?.requests?.storage;
  const liveSize = current?.spec?.resources?.requests?.storage;
  // The fast path, without a request: the same size (in any spelling, `10Gi` or `10240Mi`).
  if (!desiredSize || !liveSize || quantityValue(desiredSize) === quantityValue(liveSize)) return unchanged;

  const namespace = cr.metadata.namespace!;
  const replicas = (live.spec?.replicas as number | undefined) ?? 1;
  const claimName = (i: number) => `${current?.metadata?.name ?? 'data'}-${live.metadata.name}-${i}`;
  const claims: Claim[] = [];
  for (let i = 0; i < replicas; i++) {
    const claim = await read.claim(namespace, claimName(i));
    if (claim) claims.push({ name: claim.metadata.name, requested: claim.spec?.resources?.requests?.storage ?? liveSize, capacity: claim.status?.capacity?.storage });
  }
  const storageClassName = current?.spec?.storageClassName;
  const input: StorageInput = {
    desired: desiredSize, live: liveSize, claims, podsNotAdopted: [],
    storageClass: await read.storageClass(storageClassName), storageClassName: storageClassName ?? '(the default)',
  };
  let step = decideStorageStep(input);
  // Only the replacement depends on the pods: they are read when it is next, not while the claims grow.
  if (step.kind === 'replaceStatefulSet') step = decideStorageStep({ ...input, podsNotAdopted: await podsNotAdopted(read, live, replicas) });
  // Until the StatefulSet is replaced, it is written with the volume size it has (a template cannot change in place).
  const spec = (desired as unknown as { spec: Record<string, unknown> }).spec;
  const kept = withDesiredHash({
    ...desired,
    spec: { ...spec, volumeClaimTemplates: [{ ...wanted, spec: { ...wanted?.spec, resources: { requests: { storage: liveSize } } } }] },
  } as KubeObject, hashAnnotation);
  if (step.kind === 'refused' || step.kind === 'unchanged') return { step, statefulSet: desired };
  if (step.kind === 'blocked') return { step, statefulSet: kept, requeueAfterMs: 60_000 };
  if (step.kind === 'waiting' || detectOnly) return { step, statefulSet: kept, requeueAfterMs: 2_000 };
  if (step.kind === 'resizeClaim') {
    return { step, statefulSet: kept, write: { kind: 'resizeClaim', namespace, claim: step.claim, size: desiredSize }, changed: `${step.claim} grows to ${desiredSize}`, requeueAfterMs: 2_000 };
  }
  // Replace: the pods stay (orphaned) and the new StatefulSet adopts them.
  return {
    step, statefulSet: kept,
    write: { kind: 'replaceStatefulSet', namespace, name: live.metadata.name, uid: live.metadata.uid! },
    changed: `StatefulSet/${live.metadata.name} deleted with its pods left running, to be created again with ${desiredSize} volumes`, requeueAfterMs: 1_000,
  };
}
