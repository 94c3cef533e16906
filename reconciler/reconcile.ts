/**
 * The DistributedKV logic: desired = synth(spec); for each desired object,
 * find the live one (cache first, the API server on a miss), refuse what is
 * not this cluster's or cannot change, apply what is missing, changed or
 * drifted; prune what is no longer desired; then report status.
 *
 * Contract (controller-runtime's): reconcile is handed a key, never an event.
 * It reads the current state, acts, and returns a result or throws. An
 * ordinary error means "retry with backoff"; a TerminalError means "do not
 * retry until the object changes". It may run any time, be interrupted and
 * run again: it never trusts its own earlier status to decide what to write.
 */
import type { GeneratorConfig } from '../api/config.js';
import { formatProblem, InvalidConfigError } from '../api/problem.js';
import { dottedPath } from '../api/schema-errors.js';
import { API_VERSION, KIND, validateDistributedKV, type ValidResource } from '../api/validate.js';
import { synthesizeCluster } from '../constructs/synthesize.js';
import type { KubeObject } from '../constructs/hash.js';
import type { DistributedKVStatus, GeneratedObject } from '../imports/distributedkv.js';
import type { ClusterMemory } from './cluster-memory.js';
import { findDrift, type DriftedField } from './drift.js';
import type { EventRecorder } from './events.js';
import { refusedStatefulSetChanges } from './immutable-changes.js';
import { objectKey, type CachedObject, type Informer } from './informer.js';
import { KubeApiError, resourcePath, type KubeClient } from './kube-client.js';
import type { ApplyReason, ControllerMetrics } from './metrics.js';
import { claimedNames, precedes } from './name-claims.js';
import { ownershipOf } from './ownership.js';
import { desiredStatus, statusChanged, statusPatch, type DegradedReason, type ObservedState } from './status.js';

export interface ReconcileResult {
  /** Look again after this long even if nothing changes. */
  readonly requeueAfterMs?: number;
}

/** An error retrying cannot fix (an invalid spec): wait for the object to change. */
export class TerminalError extends Error {}

/** The kinds a DistributedKV generates, by `apiVersion/kind`. */
export type OwnedCaches = ReadonlyMap<string, Informer>;


export interface ReconcileContext {
  /** Fenced by the leadership term: a replica that lost the Lease sends nothing more. */
  readonly client: KubeClient;
  readonly config: GeneratorConfig;
  readonly clusters: Informer;
  readonly owned: OwnedCaches;
  readonly memory: ClusterMemory;
  readonly events: EventRecorder;
  readonly metrics: ControllerMetrics;
  /** Milliseconds since the epoch (injected so tests control time). */
  readonly now: () => number;
  /** How often a cluster blocked by an object that is not its own looks again (that object is not watched). */
  readonly objectConflictRecheckMs: number;
  readonly log: (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;
}

const cacheKind = (o: { apiVersion: string; kind: string }): string => `${o.apiVersion}/${o.kind}`;
const objectName = (o: { kind?: string; metadata: { name: string } }): string => `${o.kind}/${o.metadata.name}`;

/** The cached objects this cluster controls (owner reference with its uid), from the owner index. */
function ownedObjects(ctx: ReconcileContext, cr: CachedObject): CachedObject[] {
  return [...ctx.owned.values()].flatMap((informer) => informer.byIndex(cr.metadata.uid!)).filter((o) => o.metadata.namespace === cr.metadata.namespace);
}

function describeDrift(fields: readonly DriftedField[]): string {
  return fields.map((f) => `${f.path}${f.manager ? ` (changed by ${f.manager})` : ''}`).join(', ');
}

function clock(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * Whether a problem is news, to be reported in an Event: neither the
 * cluster's status nor this process has reported the same message for the
 * same reason. A problem that persists is reported once.
 */
function isNews(ctx: ReconcileContext, cr: CachedObject, key: string, reason: DegradedReason, message: string): boolean {
  const news = ctx.memory.isNews(key, reason, message);
  const inStatus = (cr.status as DistributedKVStatus | undefined)?.conditions?.some((c) => c.type === 'Degraded' && c.reason === reason && c.message === message);
  return news && !inStatus;
}

interface PlannedWrite {
  readonly desired: KubeObject;
  readonly reason: ApplyReason;
  readonly drift: readonly DriftedField[];
}

export async function reconcileDistributedKV(key: string, ctx: ReconcileContext): Promise<ReconcileResult> {
  const cr = ctx.clusters.get(key);
  if (!cr) {
    ctx.memory.forget(key); // gone: its objects go with it (owner references)
    return {};
  }
  if (cr.metadata.deletionTimestamp) return releaseLegacyFinalizer(ctx, cr, key);

  const { config } = ctx;
  const { fieldManager, detectOnlyAnnotation } = config.controller;
  const hashAnnotation = config.hashAnnotation;
  const detectOnly = cr.metadata.annotations?.[detectOnlyAnnotation] === 'true';
  const uid: string = cr.metadata.uid!;
  const owned = ownedObjects(ctx, cr);

  const { status: _status, ...document } = cr;
  const validation = validateDistributedKV(document, config);
  if (!validation.valid) {
    return refuse(ctx, cr, owned, 'InvalidSpec', validation.problems.map((p) => `${dottedPath(p.segments)}: ${p.message}`).join('; '));
  }
  const clash = nameClash(ctx, cr);
  if (clash) return refuse(ctx, cr, owned, 'NameClash', clash);

  const resource: ValidResource = { ...validation.resource, metadata: { ...validation.resource.metadata, namespace: cr.metadata.namespace } };
  let desired: KubeObject[];
  try {
    desired = synthesizeCluster(resource, config);
  } catch (e) {
    if (!(e instanceof InvalidConfigError)) throw e;
    return refuse(ctx, cr, owned, 'InvalidConfig', e.problems.map(formatProblem).join('; '));
  }
  const previouslyGenerated = new Set(((cr.status as DistributedKVStatus | undefined)?.generatedObjects ?? []).map((g: GeneratedObject) => `${g.kind}/${g.name}`));
  const now = ctx.now();
  ctx.memory.retain(key, new Set(desired.map(objectName)), now);

  // The live objects: from the cache; on a miss (the cache holds only objects with our
  // labels) from the API server, since a missing object may be someone else's of that name.
  const live = new Map<string, CachedObject | undefined>();
  await Promise.all(desired.map(async (object) => live.set(objectName(object), ctx.owned.get(cacheKind(object))?.get(`${object.metadata.namespace}/${object.metadata.name}`) ?? await getObject(ctx.client, object))));

  // Objects of ours' names that are someone else's: never written, never pruned.
  const blocked = new Set<string>();
  const conflicts: string[] = [];
  for (const object of desired) {
    const current = live.get(objectName(object));
    if (!current) continue;
    const ownership = ownershipOf(current, uid, object.metadata.annotations?.[hashAnnotation], hashAnnotation, detectOnly);
    if (ownership.ours) continue;
    blocked.add(objectName(object));
    conflicts.push(`${objectName(object)} already exists and is not this cluster's (${ownership.owner}): rename the cluster or remove that object`);
  }
  const statefulSet = desired.find((o) => o.kind === 'StatefulSet')!;
  const liveStatefulSet = conflicts.length === 0 ? live.get(objectName(statefulSet)) : undefined;
  const hashChanged = liveStatefulSet?.metadata.annotations?.[hashAnnotation] !== statefulSet.metadata.annotations?.[hashAnnotation];
  const ownedStatefulSets = owned.filter((o) => o.kind === 'StatefulSet');
  if (!liveStatefulSet && conflicts.length === 0) ownedStatefulSets.push(...await formerStatefulSets(ctx, cr, statefulSet));
  const refused = refusedStatefulSetChanges(statefulSet, hashChanged ? liveStatefulSet : undefined, ownedStatefulSets, fieldManager);
  if (refused.length > 0) return refuse(ctx, cr, owned, 'ConfigChangeRefused', refused.join('; '));

  // Plan: what to write and why, from the live objects alone.
  const writes: PlannedWrite[] = [];
  const heldFields: string[] = [];
  let recheckAt: number | undefined;
  for (const object of desired) {
    const name = objectName(object);
    const current = live.get(name);
    if (!current) {
      // It existed before (status lists it): someone deleted it.
      const deleted = previouslyGenerated.has(name);
      writes.push({ desired: object, reason: deleted ? 'drift' : 'created', drift: deleted ? [{ path: '(object deleted)' }] : [] });
      continue;
    }
    if (blocked.has(name)) continue;
    const memory = ctx.memory.object(key, name);
    const hash = object.metadata.annotations![hashAnnotation];
    // Another hash on the live object is a spec change, unless this process already applied
    // the desired one: then another writer replaced it (a GitOps tool applying other content),
    // which is drift (the hash annotation among the drifted fields) and meets the fight brake.
    if (current.metadata.annotations?.[hashAnnotation] !== hash && memory.appliedHash !== hash) {
      writes.push({ desired: object, reason: 'spec-changed', drift: [] });
      continue;
    }
    const ignored = memory.notKept?.hash === hash ? memory.notKept.paths : undefined;
    const drift = findDrift(object, current, fieldManager).filter((f) => !ignored?.has(f.path));
    if (drift.length === 0) continue;
    const held = drift.filter((f) => memory.fights.heldUntil(f.path, now) !== undefined);
    for (const f of held) {
      const until = memory.fights.heldUntil(f.path, now)!;
      heldFields.push(`${name} ${f.path}: ${f.manager ? `${f.manager} keeps changing it` : 'another writer keeps changing it'}; left alone until ${clock(until)}`);
      recheckAt = Math.min(recheckAt ?? until, until);
    }
    if (held.length < drift.length) writes.push({ desired: object, reason: 'drift', drift });
  }
  const desiredNames = new Set(desired.map(objectName));
  const prunable = owned.filter((o) => !desiredNames.has(objectName(o)));

  const ownerReference = { apiVersion: API_VERSION, kind: KIND, name: cr.metadata.name, uid, controller: true, blockOwnerDeletion: true };
  const failures: string[] = [];
  const applied = new Map<string, CachedObject>();
  const driftReports: string[] = [];
  const created: string[] = [];
  const updated: string[] = [];
  const corrected: string[] = [];
  const fights: string[] = [];
  const notKeptReports: string[] = [];

  // Independent objects are written in parallel: a reconcile costs one round trip, not one per object.
  await Promise.all(writes.map(async (write) => {
    const name = objectName(write.desired);
    for (const field of write.drift) ctx.metrics.recordDrift(write.desired.kind, field.path, field.manager, detectOnly ? 'reported' : 'corrected');
    if (detectOnly) {
      if (write.reason === 'drift') driftReports.push(`${name}: ${describeDrift(write.drift)}`);
      else driftReports.push(`${name}: ${write.reason === 'created' ? 'missing' : 'differs from the spec'}`);
      return;
    }
    try {
      const body = { ...write.desired, metadata: { ...write.desired.metadata, ownerReferences: [ownerReference] } };
      const result = await ctx.client.apply<CachedObject>(body, { fieldManager, force: true });
      applied.set(name, result);
      const memory = ctx.memory.object(key, name);
      const hash = write.desired.metadata.annotations![hashAnnotation];
      memory.appliedHash = hash;
      const notKept = findDrift(write.desired, result, fieldManager);
      if (notKept.length > 0 && memory.notKept?.hash !== hash) {
        memory.notKept = { hash, paths: new Set(notKept.map((f) => f.path)) };
        const fields = notKept.map((f) => f.path).join(', ');
        ctx.log('warn', 'the API server does not keep fields as applied; they are not compared', { key, object: name, fields });
        notKeptReports.push(`${name}: the API server does not keep ${fields} as generated (check the configuration's patches); not treated as drift`);
      }
      ctx.metrics.applies.inc({ kind: write.desired.kind, reason: write.reason });
      ctx.log('info', 'applied', { key, object: name, reason: write.reason, ...(write.drift.length ? { drift: write.drift } : {}) });
      if (write.reason === 'drift') {
        corrected.push(`${name}: restored ${describeDrift(write.drift)}`);
        for (const field of write.drift) {
          const until = memory.fights.corrected(field.path, now);
          if (until === undefined) continue;
          fights.push(`${name} ${field.path}: ${field.manager ? `${field.manager} keeps changing it` : 'another writer keeps changing it'}; left alone until ${clock(until)}`);
          recheckAt = Math.min(recheckAt ?? until, until);
        }
      } else {
        (write.reason === 'created' ? created : updated).push(name);
      }
    } catch (e) {
      failures.push(`${name}: ${(e as Error).message}`);
      ctx.log('error', 'apply failed', { key, object: name, error: (e as Error).message });
    }
  }));
  driftReports.sort();
  // An earlier version added a finalizer that deleted children the garbage collector
  // deletes anyway, and blocked namespace deletion when the controller was gone.
  if (!detectOnly && (cr.metadata.finalizers ?? []).includes(config.controller.finalizer)) {
    await removeLegacyFinalizer(ctx, cr).catch((e: Error) => failures.push(`finalizer: ${e.message}`));
  }

  const involved = { apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata };
  const events: Promise<void>[] = [];
  if (created.length > 0) events.push(ctx.events.record(involved, 'Normal', 'Created', `created ${created.sort().join(', ')}`));
  if (updated.length > 0) events.push(ctx.events.record(involved, 'Normal', 'Updated', `updated to match the spec: ${updated.sort().join(', ')}`));
  for (const message of corrected) events.push(ctx.events.record(involved, 'Warning', 'DriftCorrected', message));
  for (const message of fights) events.push(ctx.events.record(involved, 'Warning', 'FieldConflict', `${message}: it is no longer corrected on every change (see "Handing a field over" in the README)`));
  for (const message of notKeptReports) events.push(ctx.events.record(involved, 'Warning', 'FieldsNotKept', message));

  if (!detectOnly) {
    const pruned = await deleteObjects(ctx, key, prunable, failures);
    for (const name of pruned) events.push(ctx.events.record(involved, 'Normal', 'Pruned', `${name} deleted: no longer part of the spec`));
  } else {
    for (const o of prunable) driftReports.push(`${objectName(o)}: no longer part of the spec`);
  }
  const conflictMessage = conflicts.sort().join('; ');
  if (conflictMessage && isNews(ctx, cr, key, 'ObjectConflict', conflictMessage)) events.push(ctx.events.record(involved, 'Warning', 'ObjectConflict', conflictMessage));
  await Promise.all(events);

  if (failures.length > 0) await ctx.events.record(involved, 'Warning', 'ApplyFailed', failures.join('; '));
  const detected = driftReports.join('; ');
  ctx.memory.resolvedExcept(key, [conflictMessage ? 'ObjectConflict' : '', detected ? 'DriftDetected' : ''].filter(Boolean));
  if (detectOnly && detected && isNews(ctx, cr, key, 'DriftDetected', detected)) await ctx.events.record(involved, 'Warning', 'DriftDetected', detected);

  const generatedObjects: GeneratedObject[] = desired.map((o) => {
    const current = applied.get(objectName(o)) ?? live.get(objectName(o));
    const ours = blocked.has(objectName(o)) ? undefined : current?.metadata.uid;
    return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(ours ? { uid: ours } : {}), hash: o.metadata.annotations![hashAnnotation] };
  });
  const cronJob = desired.find((o) => o.kind === 'CronJob');
  const fightMessage = [...fights, ...heldFields].sort().join('; ');
  const degraded: ObservedState['degraded'] = conflicts.length > 0 ? { reason: 'ObjectConflict', message: conflictMessage }
    : failures.length > 0 ? { reason: 'ApplyFailed', message: failures.join('; ') }
      : fightMessage ? { reason: 'FieldConflict', message: fightMessage }
        : detected ? { reason: 'DriftDetected', message: detected } : undefined;
  await writeStatus(ctx, cr, {
    generation: cr.metadata.generation ?? 0,
    size: resource.spec.size,
    statefulSet: (applied.get(objectName(statefulSet)) ?? liveStatefulSet) as ObservedState['statefulSet'],
    cronJob: cronJob && !blocked.has(objectName(cronJob)) ? (live.get(objectName(cronJob)) as ObservedState['cronJob']) : undefined,
    generatedObjects,
    degraded,
  });

  if (failures.length > 0) throw new Error(`${failures.length} write(s) failed: ${failures.join('; ')}`);
  const waits = [conflicts.length > 0 ? ctx.objectConflictRecheckMs : undefined, recheckAt !== undefined ? Math.max(1000, recheckAt - ctx.now()) : undefined].filter((w): w is number => w !== undefined);
  return waits.length > 0 ? { requeueAfterMs: Math.min(...waits) } : {};
}

/**
 * The other cluster that claims one of this cluster's object names and
 * keeps it (the older one), from the cluster cache's name index.
 */
function nameClash(ctx: ReconcileContext, cr: CachedObject): string | undefined {
  for (const claim of claimedNames(cr, ctx.config)) {
    const holder = claimHolder(ctx, claim);
    const rival = ctx.clusters.byIndex(claim).find((other) => other.metadata.uid !== cr.metadata.uid && !other.metadata.deletionTimestamp
      && (holder === other.metadata.uid || (holder !== cr.metadata.uid && precedes(other, cr))));
    if (rival) {
      const object = claim.slice(claim.indexOf('/') + 1);
      return `${object} is also generated by DistributedKV ${rival.metadata.name}, which is older and keeps it: rename this cluster (or change the name templates)`;
    }
  }
  return undefined;
}

/** The uid of the cluster that controls the claimed object (`namespace/Kind/name`) now, if the cache has it. */
function claimHolder(ctx: ReconcileContext, claim: string): string | undefined {
  const [namespace, kind, ...name] = claim.split('/');
  const informer = [...ctx.owned.entries()].find(([k]) => k.endsWith(`/${kind}`))?.[1];
  const object = informer?.get(`${namespace}/${name.join('/')}`);
  return (object?.metadata.ownerReferences ?? []).find((r: { controller?: boolean }) => r.controller)?.uid;
}

/**
 * Reports a cluster the controller cannot act on (invalid spec or
 * configuration, a name clash, a change its StatefulSet cannot take) and
 * writes nothing else: its running objects stay as they are, and its status
 * still tells the truth about them. Not retried until something changes.
 */
async function refuse(ctx: ReconcileContext, cr: CachedObject, owned: readonly CachedObject[], reason: DegradedReason, message: string): Promise<never> {
  const previous = cr.status as DistributedKVStatus | undefined;
  const news = isNews(ctx, cr, objectKey(cr), reason, message);
  const statefulSet = owned.find((o) => o.kind === 'StatefulSet');
  const cronJob = owned.find((o) => o.kind === 'CronJob');
  const generatedObjects: GeneratedObject[] = owned.map((o) => ({ apiVersion: o.apiVersion!, kind: o.kind!, name: o.metadata.name, uid: o.metadata.uid!, hash: o.metadata.annotations?.[ctx.config.hashAnnotation] ?? '' }))
    .sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`));
  await writeStatus(ctx, cr, {
    generation: cr.metadata.generation ?? 0,
    statefulSet: statefulSet as ObservedState['statefulSet'],
    cronJob: cronJob as ObservedState['cronJob'],
    generatedObjects: owned.length > 0 ? generatedObjects : previous?.generatedObjects ?? [],
    degraded: { reason, message },
  });
  if (news) await ctx.events.record({ apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata }, 'Warning', reason, message);
  throw new TerminalError(`${reason}: ${message}`);
}

/**
 * StatefulSets this cluster generated under another name that the cache
 * cannot show (a configuration that changed the labels as well as the name
 * template): status says where to look, the live object decides. Asked only
 * when the desired StatefulSet does not exist, so never in steady state.
 */
async function formerStatefulSets(ctx: ReconcileContext, cr: CachedObject, desired: KubeObject): Promise<CachedObject[]> {
  const listed = ((cr.status as DistributedKVStatus | undefined)?.generatedObjects ?? []).filter((g) => g.kind === 'StatefulSet' && g.name !== desired.metadata.name);
  const found = await Promise.all(listed.map((g) => getObject(ctx.client, { ...desired, metadata: { ...desired.metadata, name: g.name } })));
  return found.filter((o): o is CachedObject => o !== undefined && ownershipOf(o, cr.metadata.uid!, undefined, ctx.config.hashAnnotation).ours);
}

/** The object as the API server has it, or undefined when there is none. */
async function getObject(client: KubeClient, object: KubeObject): Promise<CachedObject | undefined> {
  try {
    const found = await client.request<CachedObject>('GET', resourcePath(object.apiVersion, object.kind, object.metadata.namespace, object.metadata.name));
    return { ...found, apiVersion: object.apiVersion, kind: object.kind };
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 404) return undefined;
    throw e;
  }
}

/**
 * A cluster being deleted: its objects are the garbage collector's (owner
 * references), which honours the deletion's propagation policy, so
 * `--cascade=orphan` keeps them. All that is left is to drop the finalizer
 * an earlier version of this controller added.
 */
async function releaseLegacyFinalizer(ctx: ReconcileContext, cr: CachedObject, key: string): Promise<ReconcileResult> {
  if ((cr.metadata.finalizers ?? []).includes(ctx.config.controller.finalizer)) {
    await removeLegacyFinalizer(ctx, cr);
    ctx.log('info', 'removed the finalizer of an earlier version; the garbage collector deletes the objects', { key });
  }
  return {};
}

/**
 * Removes our finalizer, whoever wrote it, with a JSON patch guarded by
 * `test` operations: the cluster must still have this uid and the finalizer
 * at the index the cache saw, so a concurrent change to the list makes the
 * patch fail (and the reconcile retry) instead of removing someone else's.
 * A cluster already gone is not an error.
 */
async function removeLegacyFinalizer(ctx: ReconcileContext, cr: CachedObject): Promise<void> {
  const { name, namespace, uid } = cr.metadata;
  const finalizer = ctx.config.controller.finalizer;
  const index = (cr.metadata.finalizers as string[]).indexOf(finalizer);
  try {
    await ctx.client.request('PATCH', resourcePath(API_VERSION, KIND, namespace, name), {
      body: [
        { op: 'test', path: '/metadata/uid', value: uid },
        { op: 'test', path: `/metadata/finalizers/${index}`, value: finalizer },
        { op: 'remove', path: `/metadata/finalizers/${index}` },
      ],
      contentType: 'application/json-patch+json',
    });
  } catch (e) {
    if (!(e instanceof KubeApiError && e.status === 404)) throw e;
  }
}

async function writeStatus(ctx: ReconcileContext, cr: CachedObject, observed: ObservedState): Promise<void> {
  const previous = cr.status as DistributedKVStatus | undefined;
  const next = desiredStatus(observed, previous, new Date(ctx.now()));
  if (!statusChanged(previous, next)) return;
  // Only the status subresource: the controller never writes spec. No resourceVersion
  // precondition: the status describes what was observed, and only the leader writes it.
  const path = resourcePath(API_VERSION, KIND, cr.metadata.namespace, cr.metadata.name);
  await ctx.client.request('PATCH', `${path}/status`, { body: statusPatch(previous, next), contentType: 'application/merge-patch+json' });
}

/** Deletes objects this cluster controls, each guarded by its uid; returns their names. 404 is success. */
async function deleteObjects(ctx: ReconcileContext, key: string, objects: readonly CachedObject[], failures: string[]): Promise<string[]> {
  const deleted: string[] = [];
  await Promise.all(objects.map(async (object) => {
    const name = objectName(object);
    try {
      await ctx.client.request('DELETE', resourcePath(object.apiVersion!, object.kind!, object.metadata.namespace, object.metadata.name), {
        query: { propagationPolicy: 'Background' },
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: object.metadata.uid } },
      });
      deleted.push(name);
      ctx.metrics.applies.inc({ kind: object.kind!, reason: 'pruned' });
      ctx.log('info', 'deleted', { key, object: name });
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return;
      failures.push(`${name}: ${(e as Error).message}`);
    }
  }));
  return deleted.sort();
}
