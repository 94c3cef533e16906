/**
 * The DistributedKV logic: desired = synth(spec); for each desired object,
 * compare with the cache and apply what is missing, changed or drifted;
 * prune what is no longer desired; then report status.
 *
 * Contract (controller-runtime's): reconcile is handed a key, never an event.
 * It reads the current state, acts, and returns a result or throws. An
 * ordinary error means "retry with backoff"; a TerminalError means "do not
 * retry until the object changes". It may run any time, be interrupted and
 * run again: it never trusts its own earlier status to decide what to write.
 */
import type { GeneratorConfig } from '../api/config.js';
import { dottedPath } from '../api/schema-errors.js';
import { API_VERSION, KIND, validateDistributedKV, type ValidResource } from '../api/validate.js';
import { synthesizeCluster } from '../constructs/synthesize.js';
import type { KubeObject } from '../constructs/hash.js';
import type { DistributedKVStatus, GeneratedObject } from '../imports/distributedkv.js';
import { findDrift, type DriftedField } from './drift.js';
import type { EventRecorder } from './events.js';
import type { CachedObject, Informer } from './informer.js';
import { KubeApiError, resourcePath, type KubeClient } from './kube-client.js';
import type { ApplyReason, ControllerMetrics } from './metrics.js';
import { desiredStatus, statusChanged, type ObservedState } from './status.js';

export interface ReconcileResult {
  /** Look again after this long even if nothing changes. */
  readonly requeueAfterMs?: number;
}

/** An error retrying cannot fix (an invalid spec): wait for the object to change. */
export class TerminalError extends Error {}

/** The kinds a DistributedKV generates, by `apiVersion/kind`. */
export type OwnedCaches = ReadonlyMap<string, Informer>;

/**
 * Fields the API server does not keep as applied (it drops or rewrites them:
 * a sessionAffinityConfig without sessionAffinity, say), by object, for one
 * desired hash. Comparing them would find "drift" after every apply and loop
 * forever; they are reported once and left out of the comparison.
 */
export type NotKeptFields = Map<string, { readonly hash: string; readonly paths: ReadonlySet<string> }>;

export interface ReconcileContext {
  readonly notKept: NotKeptFields;
  readonly client: KubeClient;
  readonly config: GeneratorConfig;
  readonly clusters: Informer;
  readonly owned: OwnedCaches;
  readonly events: EventRecorder;
  readonly metrics: ControllerMetrics;
  readonly log: (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;
}

const cacheKind = (o: { apiVersion: string; kind: string }): string => `${o.apiVersion}/${o.kind}`;
const objectName = (o: { kind: string; metadata: { name: string } }): string => `${o.kind}/${o.metadata.name}`;
const objectId = (o: KubeObject): string => `${o.metadata.namespace}/${o.kind}/${o.metadata.name}`;

/** The cached objects this cluster controls (owner reference with its uid), from the owner index. */
function ownedObjects(ctx: ReconcileContext, cr: CachedObject, uid: string): CachedObject[] {
  return [...ctx.owned.values()].flatMap((informer) => informer.byIndex(uid)).filter((o) => o.metadata.namespace === cr.metadata.namespace);
}

function describeDrift(fields: readonly DriftedField[]): string {
  return fields.map((f) => `${f.path}${f.manager ? ` (changed by ${f.manager})` : ''}`).join(', ');
}

interface PlannedWrite {
  readonly desired: KubeObject;
  readonly reason: ApplyReason;
  readonly drift: readonly DriftedField[];
}

export async function reconcileDistributedKV(key: string, ctx: ReconcileContext): Promise<ReconcileResult> {
  const cr = ctx.clusters.get(key);
  if (!cr) return {}; // gone: its objects go with it (owner references, and the finalizer's cleanup before that)
  const { config, client } = ctx;
  const { fieldManager, finalizer, detectOnlyAnnotation } = config.controller;
  const detectOnly = cr.metadata.annotations?.[detectOnlyAnnotation] === 'true';
  const crPath = resourcePath(API_VERSION, KIND, cr.metadata.namespace, cr.metadata.name);
  const uid: string = cr.metadata.uid!;
  const involved = { apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata };

  if (cr.metadata.deletionTimestamp) {
    if (!(cr.metadata.finalizers ?? []).includes(finalizer)) return {};
    await deleteOwned(ctx, cr, uid, () => true);
    await applyFinalizer(ctx, cr, []);
    ctx.log('info', 'cleaned up and removed finalizer', { key });
    return {};
  }

  const { status: previousStatus, ...document } = cr;
  const validation = validateDistributedKV(document, config);
  if (!validation.valid) {
    const message = validation.problems.map((p) => `${dottedPath(p.segments)}: ${p.message}`).join('; ');
    const wasInvalid = previousStatus?.conditions?.some((c: { type: string; reason: string; message: string }) => c.type === 'Degraded' && c.reason === 'InvalidSpec' && c.message === message);
    await writeStatus(ctx, cr, crPath, { generation: cr.metadata.generation ?? 0, generatedObjects: previousStatus?.generatedObjects ?? [], degraded: { reason: 'InvalidSpec', message } });
    if (!wasInvalid) await ctx.events.record(involved, 'Warning', 'InvalidSpec', message);
    throw new TerminalError(`invalid spec: ${message}`);
  }

  // Added alongside the first writes rather than before them: should the cluster be deleted
  // in between, its objects' owner references still take them away. A failed finalizer write
  // fails the reconcile, but only after the other writes settled.
  const finalizerResult = !detectOnly && !(cr.metadata.finalizers ?? []).includes(finalizer)
    ? applyFinalizer(ctx, cr, [finalizer]).then(() => undefined, (e: Error) => e)
    : Promise.resolve(undefined);

  const resource: ValidResource = { ...validation.resource, metadata: { ...validation.resource.metadata, namespace: cr.metadata.namespace } };
  const desired = synthesizeCluster(resource, config);
  const hashAnnotation = config.hashAnnotation;
  const previouslyGenerated = new Set((previousStatus?.generatedObjects ?? []).map((g: GeneratedObject) => `${g.kind}/${g.name}`));

  // Plan from the cache alone: no request per object.
  const writes: PlannedWrite[] = [];
  const live = new Map<string, CachedObject | undefined>();
  for (const object of desired) {
    const current = ctx.owned.get(cacheKind(object))?.get(`${object.metadata.namespace}/${object.metadata.name}`);
    live.set(objectName(object), current);
    if (!current) {
      // It existed before (status lists it): someone deleted it.
      const deleted = previouslyGenerated.has(objectName(object));
      writes.push({ desired: object, reason: deleted ? 'drift' : 'created', drift: deleted ? [{ path: '(object deleted)' }] : [] });
    } else if (current.metadata.annotations?.[hashAnnotation] !== object.metadata.annotations?.[hashAnnotation]) {
      writes.push({ desired: object, reason: 'spec-changed', drift: [] });
    } else {
      const ignored = ctx.notKept.get(objectId(object));
      const hash = object.metadata.annotations?.[hashAnnotation];
      const drift = findDrift(object, current, fieldManager).filter((f) => !(ignored && ignored.hash === hash && ignored.paths.has(f.path)));
      if (drift.length > 0) writes.push({ desired: object, reason: 'drift', drift });
    }
  }
  const desiredNames = new Set(desired.map(objectName));
  const prunable = ownedObjects(ctx, cr, uid).filter((o) => !desiredNames.has(objectName(o as { kind: string; metadata: { name: string } })));

  const ownerReference = { apiVersion: API_VERSION, kind: KIND, name: cr.metadata.name, uid, controller: true, blockOwnerDeletion: true };
  const failures: string[] = [];
  const applied = new Map<string, CachedObject>();
  const driftReports: string[] = [];

  const created: string[] = [];
  const updated: string[] = [];
  const corrected: string[] = [];
  const notKeptReports: string[] = [];
  // Independent objects are written in parallel: a reconcile costs one round trip, not one per object.
  await Promise.all(writes.map(async (write) => {
    const name = objectName(write.desired);
    for (const field of write.drift) ctx.metrics.drift.inc({ kind: write.desired.kind, field: field.path, manager: field.manager ?? 'unknown', action: detectOnly ? 'reported' : 'corrected' });
    if (detectOnly) {
      if (write.reason === 'drift') driftReports.push(`${name}: ${describeDrift(write.drift)}`);
      else driftReports.push(`${name}: ${write.reason === 'created' ? 'missing' : 'differs from the spec'}`);
      return;
    }
    try {
      const body = { ...write.desired, metadata: { ...write.desired.metadata, ownerReferences: [ownerReference] } };
      const result = await client.apply<CachedObject>(body, { fieldManager, force: true });
      applied.set(name, result);
      const notKept = findDrift(write.desired, result, fieldManager);
      if (notKept.length > 0) {
        const hash = write.desired.metadata.annotations![hashAnnotation];
        const id = objectId(write.desired);
        if (ctx.notKept.get(id)?.hash !== hash) {
          ctx.notKept.set(id, { hash, paths: new Set(notKept.map((f) => f.path)) });
          const fields = notKept.map((f) => f.path).join(', ');
          ctx.log('warn', 'the API server does not keep fields as applied; they are not compared', { key, object: name, fields });
          notKeptReports.push(`${name}: the API server does not keep ${fields} as generated (check the configuration's patches); not treated as drift`);
        }
      }
      ctx.metrics.applies.inc({ kind: write.desired.kind, reason: write.reason });
      ctx.log('info', 'applied', { key, object: name, reason: write.reason, ...(write.drift.length ? { drift: write.drift } : {}) });
      if (write.reason === 'drift') corrected.push(`${name}: restored ${describeDrift(write.drift)}`);
      else (write.reason === 'created' ? created : updated).push(name);
    } catch (e) {
      failures.push(`${name}: ${(e as Error).message}`);
      ctx.log('error', 'apply failed', { key, object: name, error: (e as Error).message });
    }
  }));
  driftReports.sort();
  const finalizerError = await finalizerResult;
  if (finalizerError) failures.push(`finalizer: ${finalizerError.message}`);

  const events: Promise<void>[] = [];
  if (created.length > 0) events.push(ctx.events.record(involved, 'Normal', 'Created', `created ${created.sort().join(', ')}`));
  if (updated.length > 0) events.push(ctx.events.record(involved, 'Normal', 'Updated', `updated to match the spec: ${updated.sort().join(', ')}`));
  for (const message of corrected) events.push(ctx.events.record(involved, 'Warning', 'DriftCorrected', message));
  for (const message of notKeptReports) events.push(ctx.events.record(involved, 'Warning', 'FieldsNotKept', message));

  if (!detectOnly) {
    const pruned = await deleteOwned(ctx, cr, uid, (o) => prunable.includes(o), failures);
    for (const name of pruned) events.push(ctx.events.record(involved, 'Normal', 'Pruned', `${name} deleted: no longer part of the spec`));
  } else {
    for (const o of prunable) driftReports.push(`${objectName(o as { kind: string; metadata: { name: string } })}: no longer part of the spec`);
  }
  await Promise.all(events);

  if (failures.length > 0) await ctx.events.record(involved, 'Warning', 'ApplyFailed', failures.join('; '));

  const detected = driftReports.join('; ');
  const previousDrift = previousStatus?.conditions?.find((c: { type: string; reason: string }) => c.type === 'Degraded' && c.reason === 'DriftDetected')?.message;
  if (detectOnly && detected && detected !== previousDrift) await ctx.events.record(involved, 'Warning', 'DriftDetected', detected);

  const generatedObjects: GeneratedObject[] = desired.map((o) => {
    const current = applied.get(objectName(o)) ?? live.get(objectName(o));
    return { apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, ...(current?.metadata.uid ? { uid: current.metadata.uid } : {}), hash: o.metadata.annotations![hashAnnotation] };
  });
  const stsDesired = desired.find((o) => o.kind === 'StatefulSet')!;
  const cronDesired = desired.find((o) => o.kind === 'CronJob');
  await writeStatus(ctx, cr, crPath, {
    generation: cr.metadata.generation ?? 0,
    size: resource.spec.size,
    statefulSet: (applied.get(objectName(stsDesired)) ?? live.get(objectName(stsDesired))) as ObservedState['statefulSet'],
    cronJob: cronDesired ? (live.get(objectName(cronDesired)) as ObservedState['cronJob']) : undefined,
    generatedObjects,
    degraded: failures.length > 0 ? { reason: 'ApplyFailed', message: failures.join('; ') } : detected ? { reason: 'DriftDetected', message: detected } : undefined,
  });

  if (failures.length > 0) throw new Error(`${failures.length} write(s) failed: ${failures.join('; ')}`);
  return {};
}

/**
 * Sets the controller's finalizers on the cluster by server-side apply of
 * metadata.finalizers alone: finalizers form a set, so this adds or removes
 * only ours and never conflicts with other writers. The uid makes it a
 * precondition, never a create: a cluster deleted since the cache saw it (or
 * recreated under the same name) is left alone, and that is not an error.
 */
async function applyFinalizer(ctx: ReconcileContext, cr: CachedObject, finalizers: string[]): Promise<void> {
  const { name, namespace, uid } = cr.metadata;
  try {
    await ctx.client.apply({ apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace, uid, finalizers } }, { fieldManager: ctx.config.controller.fieldManager });
  } catch (e) {
    if (!(e instanceof KubeApiError && e.status === 409)) throw e;
    const current = await ctx.client.request('GET', resourcePath(API_VERSION, KIND, namespace, name)).catch((g) => {
      if (g instanceof KubeApiError && g.status === 404) return undefined;
      throw g;
    });
    if (current && current.metadata.uid === uid) throw e;
  }
}

async function writeStatus(ctx: ReconcileContext, cr: CachedObject, crPath: string, observed: ObservedState): Promise<void> {
  const previous = cr.status as DistributedKVStatus | undefined;
  const next = desiredStatus(observed, previous);
  if (!statusChanged(previous, next)) return;
  // Only the status subresource: the controller never writes spec. No resourceVersion
  // precondition: the status describes what was observed, and only the leader writes it.
  await ctx.client.request('PATCH', `${crPath}/status`, { body: { status: next }, contentType: 'application/merge-patch+json' });
}

/** Deletes the cached objects this CR controls that match; returns their names. 404 is success. */
async function deleteOwned(ctx: ReconcileContext, cr: CachedObject, uid: string, select: (o: CachedObject) => boolean, failures?: string[]): Promise<string[]> {
  const deleted: string[] = [];
  await Promise.all(ownedObjects(ctx, cr, uid).filter(select).map(async (object) => {
    const name = `${object.kind}/${object.metadata.name}`;
    try {
      await ctx.client.request('DELETE', resourcePath(object.apiVersion!, object.kind!, object.metadata.namespace, object.metadata.name), {
        query: { propagationPolicy: 'Background' },
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: object.metadata.uid } },
      });
      deleted.push(name);
      ctx.metrics.applies.inc({ kind: object.kind!, reason: 'pruned' });
      ctx.log('info', 'deleted', { key: `${cr.metadata.namespace}/${cr.metadata.name}`, object: name });
    } catch (e) {
      if (e instanceof KubeApiError && e.status === 404) return;
      if (!failures) throw e;
      failures.push(`${name}: ${(e as Error).message}`);
    }
  }));
  return deleted.sort();
}
