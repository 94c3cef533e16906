/**
 * The DistributedKV logic, in the phases CloudNativePG and controller-runtime
 * keep apart: read (the cluster, its desired objects from the one synthesis
 * function, the live objects from the cache, or from the API server on a
 * miss), refuse what cannot be acted on, plan (plan-writes.ts, pure), execute
 * (execute-writes.ts), report (report.ts). Day-2 steps (../day2/) plug in
 * before the plan: membership-step.ts decides what the engine renders this
 * time. The checks and steps decide (step-decision.ts) and this file acts on
 * what they decided: it refuses, reports and makes their writes.
 *
 * Contract (controller-runtime's, see reconcile-context.ts): reconcile is
 * handed a key, never an event. It reads the current state, acts, and returns
 * a result or throws. It may run any time, be interrupted and run again: it
 * never trusts its own earlier status to decide what to write.
 */
import { formatProblem, InvalidConfigError } from '../../api/problem.js';
import { dottedPath } from '../../model/field-path.js';
import { API_VERSION, KIND, validateDistributedKV, type ValidResource } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { hasPodMonitor } from '../../constructs/pod-monitor.js';
import { decidePodMonitor } from '../day2/pod-monitor-step.js';
import { servesKind } from './served-kind.js';
import { engineFor } from '../../engines/index.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import type { KubeObject } from '../../model/kube-object.js';
import type { DistributedKVStatus, GeneratedObject } from '../../imports/distributedkv.js';
import { addFinalizer, createJob, createTlsSecrets, executeWrites, makeMemberWrite, makeStorageWrite, removeFinalizer, removeLegacyFinalizer } from './execute-writes.js';
import { decideFinalBackup, finalizerChange, type FinalBackupDecision } from '../day2/final-backup.js';
import { imageChangeDecision } from '../day2/image-change.js';
import { refusedStatefulSetChanges } from './immutable-changes.js';
import type { CachedObject } from '../../kube/informer.js';
import { claimedNames, nameClashDecision, type ClaimIndex } from './name-claims.js';
import { controllingOwner, ownershipOf } from './ownership.js';
import { memberPods, membershipNotYet, membershipReader, membershipStep, type MembershipDecision, type MembershipStepResult } from '../day2/membership-step.js';
import { planWrites } from './plan-writes.js';
import { readObject } from './read-object.js';
import { storageReader, storageStep, volumeSizeOf } from '../day2/storage-step.js';
import { maintenanceNotYet, maintenanceStep, type MaintenanceDecision, type MaintenanceStepResult } from '../day2/maintenance-step.js';
import { withBucketLabel } from './bucket-label.js';
import { objectName, type ReconcileContext, type ReconcileResult } from './reconcile-context.js';
import { recordBackupMetrics, refuse, refuseWith, reportFinalBackup, reportOutcome } from './report.js';
import { restoreSourceDecision, restoreSourceReader } from '../day2/restore-source.js';
import { decideNetworkPolicy } from '../day2/network-policy-adoption.js';
import { liveBackupFolder, s3PathClash } from './s3-path-claims.js';
import { tlsSecretNames } from '../../engines/etcd/tls-files.js';
import { needsCertificates, PLAIN } from '../../model/tls.js';
import { migrationStatus, tlsMigration, tlsPlan } from '../day2/tls-migration-step.js';
import { tlsStep } from '../day2/tls-step.js';
import { certManagerTlsStep } from '../day2/cert-manager-tls-step.js';
import { tlsProviderChangeRefusal } from '../day2/tls-provider-change.js';
import { rotateCertificates, withRotation } from './certificate-rotation-writes.js';
import { clientUrl } from '../../engines/etcd/peer-urls.js';
import { ISSUED_KINDS } from './issued-kinds.js';
import { clientIdentitySecrets } from '../day2/client-identity-step.js';
import { actOnClientIdentities, issueClientIdentitySecrets, renewalRecheckMs } from './client-identity-writes.js';
import { CLIENT_LABEL } from '../../engines/etcd/client-identity-secrets.js';

export { TerminalError, type OwnedCaches, type ReconcileContext, type ReconcileResult } from './reconcile-context.js';

const cacheKind = (o: { apiVersion: string; kind: string }): string => `${o.apiVersion}/${o.kind}`;

/** The object, when this cluster controls it (its controlling owner reference carries the cluster's uid). */
function ours(cr: CachedObject, o: CachedObject | undefined): CachedObject | undefined {
  return o && controllingOwner(o)?.uid === cr.metadata.uid ? o : undefined;
}

const ISSUED = new Set<string>(ISSUED_KINDS.map(cacheKind));

/** How soon a cluster waiting for cert-manager's Secrets is looked at again, though their arrival enqueues it. */
const CERT_MANAGER_RECHECK_MS = 30_000;

/** The object, when it carries every one of `labels`. */
function labelledWith(o: CachedObject | undefined, labels: Readonly<Record<string, string>>): CachedObject | undefined {
  return o && Object.entries(labels).every(([k, v]) => o.metadata.labels?.[k] === v) ? o : undefined;
}

/**
 * The cached objects this cluster controls (owner reference with its uid), from the owner index:
 * what it generates, which may be pruned; never what it issued (its TLS Secrets), which no synthesis renders.
 */
function ownedObjects(ctx: ReconcileContext, cr: CachedObject): CachedObject[] {
  return [...ctx.owned.entries()].filter(([kind]) => !ISSUED.has(kind)).flatMap(([, informer]) => informer.byIndex(cr.metadata.uid!)).filter((o) => o.metadata.namespace === cr.metadata.namespace);
}

export async function reconcileDistributedKV(key: string, ctx: ReconcileContext): Promise<ReconcileResult> {
  const cr = ctx.clusters.get(key);
  if (!cr) {
    ctx.memory.forget(key); // gone: its objects go with it (owner references)
    const [namespace, name] = key.split('/');
    recordBackupMetrics(ctx, namespace, name, undefined);
    return {};
  }
  if (cr.metadata.deletionTimestamp) {
    // Its objects are the garbage collector's, which honours the propagation policy
    // (`--cascade=orphan` keeps them). An earlier version's finalizer is dropped, and a final backup may hold it.
    if ((cr.metadata.finalizers ?? []).includes(ctx.config.controller.finalizer)) await removeLegacyFinalizer(ctx, cr);
    // A cluster with backups waits for its final backup (final-backup.ts), never forever.
    if ((cr.metadata.finalizers ?? []).includes(ctx.config.backup.final.finalizer)) {
      const cronJob = (ctx.owned.get('batch/v1/CronJob')?.byIndex(cr.metadata.uid!) ?? []).find((o) => o.metadata.namespace === cr.metadata.namespace);
      const job = (name: string) => ctx.owned.get('batch/v1/Job')?.get(`${cr.metadata.namespace}/${name}`);
      return actOnFinalBackup(ctx, cr, decideFinalBackup({ cluster: cr, final: ctx.config.backup.final, cronJob, job, now: ctx.now() }));
    }
    return {};
  }

  const { config } = ctx;
  const hashAnnotation = config.hashAnnotation;
  const detectOnly = cr.metadata.annotations?.[config.controller.detectOnlyAnnotation] === 'true';
  const owned = ownedObjects(ctx, cr);

  // Read, and refuse what cannot be acted on: nothing is written to the cluster's objects then.
  const { status: _status, ...document } = cr;
  const validation = validateDistributedKV(document, config);
  if (!validation.valid) {
    return refuse(ctx, cr, key, owned, 'InvalidSpec', validation.problems.map((p) => `${dottedPath(p.segments)}: ${p.message}`).join('; '));
  }
  const clash = nameClashDecision(cr, claimedNames(cr, config), claimIndex(ctx));
  if (clash.kind === 'refuse') return refuseWith(ctx, cr, key, owned, clash);
  const sharedFolder = s3PathClash(ctx.clusters, cr, (c) => liveBackupFolder(ctx.owned.get('batch/v1/CronJob'), c));
  if (sharedFolder) return refuse(ctx, cr, key, owned, 'S3PathClash', sharedFolder);
  const namespace = cr.metadata.namespace!;
  const resource: ValidResource = { ...validation.resource, metadata: { ...validation.resource.metadata, namespace } };
  const identity = clusterIdentity(resource.metadata.name, config);
  const imageChange = await imageChangeDecision({
    problem: engineFor(config.engine).imageChangeProblem,
    statefulSet: ours(cr, ctx.owned.get('apps/v1/StatefulSet')?.get(`${namespace}/${identity.statefulSetName}`)),
    image: resource.spec.image,
    memberImages: async () => (await memberPods(ctx.client, namespace, identity)).map((p) => p.image),
  });
  if (imageChange.kind === 'refuse') return refuseWith(ctx, cr, key, owned, imageChange);
  const restoreSource = await restoreSourceDecision(
    { from: resource.spec.restore?.from, namespace, engine: config.engine, hasStatefulSet: owned.some((o) => o.kind === 'StatefulSet') },
    restoreSourceReader(ctx.client, namespace, identity.serverLabels, ctx.restoreSourceCheck, config.engine),
  );
  if (restoreSource.kind === 'refuse') return refuseWith(ctx, cr, key, owned, restoreSource);
  // While it has backups, a deletion waits for one final backup.
  // A standby's final backup is the active Kubernetes cluster's to take.
  const fleet = ctx.fleet?.();
  const finalizer = detectOnly ? undefined : finalizerChange(cr, config.backup.final.finalizer, Boolean(resource.spec.backup) && fleet?.role !== 'standby');
  if (finalizer === 'add') await addFinalizer(ctx, cr, config.backup.final.finalizer);
  if (finalizer === 'remove') await removeFinalizer(ctx, cr, config.backup.final.finalizer);
  // Day-2: one membership step (engines with a membership), whose objects this reconcile writes.
  const own = {
    statefulSet: ours(cr, ctx.owned.get('apps/v1/StatefulSet')?.get(`${namespace}/${identity.statefulSetName}`)),
    configMap: ours(cr, ctx.owned.get('v1/ConfigMap')?.get(`${namespace}/${identity.memberConfigName}`)),
  };
  // Day-2: TLS. The schemes the members run (a running cluster keeps its own: model/tls.ts), and the
  // certificates they and the controller need, issued before the members that mount them are written.
  // A running plain cluster whose spec asks for TLS explicitly moves to it member by member (tls-migration-step.ts).
  const secret = (name: string) => ours(cr, ctx.owned.get('v1/Secret')?.get(`${namespace}/${name}`));
  const secretNames = tlsSecretNames(config, identity);
  // cert-manager's Secrets are not the cluster's (no owner reference): they are its by the labels their Certificates give them.
  const labelledSecret = (name: string) => labelledWith(ctx.owned.get('v1/Secret')?.get(`${namespace}/${name}`), identity.serverLabels);
  if (config.engine === 'etcd') {
    const providerChange = tlsProviderChangeRefusal({
      asked: resource.spec.tls?.mode, statefulSet: own.statefulSet, operatorAuthority: Boolean(secret(secretNames.authority)), memberSecret: labelledSecret(secretNames.member),
    });
    if (providerChange) return refuse(ctx, cr, key, owned, 'TLSProviderChangeRefused', providerChange);
  }
  const migrationRead = {
    spec: resource.spec, config, statefulSet: own.statefulSet, previous: cr.status as DistributedKVStatus | undefined, now: ctx.now(),
    certificatesIssued: Boolean(secret(secretNames.authority) && secret(secretNames.member)),
    networkPolicyInForce: Boolean(ctx.owned.get('networking.k8s.io/v1/NetworkPolicy')?.get(`${namespace}/${identity.networkPolicyName}`)),
  };
  const planned = config.engine === 'etcd' ? tlsPlan(migrationRead) : { render: PLAIN, reach: PLAIN, issue: PLAIN };
  // mode cert-manager: the controller issues nothing, and checks what cert-manager wrote (cert-manager-tls-step.ts).
  const certManager = planned.issue.mode === 'cert-manager' ? certManagerTlsStep({
    tls: planned.issue, identity, namespace, config, secret: labelledSecret, now: new Date(ctx.now()),
    certificatesServed: !needsCertificates(planned.issue) || await (ctx.certificatesServed ?? (() => servesKind(ctx.client, 'cert-manager.io/v1', 'certificates')))(),
  }) : undefined;
  const tlsDecision = certManager ?? await tlsStep({ tls: planned.issue, identity, namespace, config, now: new Date(ctx.now()), detectOnly, secret });
  // A migration does not restart members onto Secrets the controller cannot use: it holds where it is until they are fixed.
  const tlsPlanned = planned.migration && tlsDecision.problem ? tlsPlan({ ...migrationRead, certificatesIssued: false }) : planned;
  const tls = tlsPlanned.reach;
  const takenSecrets = tlsDecision.create.length > 0 ? await createTlsSecrets(ctx, cr, tlsDecision.create, identity.serverLabels) : [];
  if (tlsDecision.create.length > takenSecrets.length) ctx.log.info('tls: issued', { key, secrets: tlsDecision.create.map((s) => s.name).filter((n) => !takenSecrets.includes(n)) });
  const tlsProblem = [tlsDecision.problem, ...takenSecrets.map((n) => `Secret ${n} exists and is not this cluster's (or not yet in the cache): it is not written over`)].filter(Boolean).join('; ') || undefined;
  // Day-2: client identities (spec.clients): their Secrets, and the root identity the members are called as (etcd authentication).
  const identities = config.engine === 'etcd' ? await clientIdentitySecrets({
    spec: resource.spec, tls, identity, config, now: new Date(ctx.now()), detectOnly,
    secret,
    clientSecrets: () => (ctx.owned.get('v1/Secret')?.byIndex(cr.metadata.uid!) ?? []).filter((s) => s.metadata.namespace === namespace && s.metadata.labels?.[CLIENT_LABEL]),
  }) : undefined;
  const identitiesIssued = identities ? await issueClientIdentitySecrets(ctx, cr, identities, identity.serverLabels, secret, secretNames) : undefined;
  // Day-2: certificate rotation (renewal, the issuing CA's rotation), at most one change per reconcile.
  const rotation = await rotateCertificates(ctx, {
    tls, identity, namespace, config, detectOnly, problem: tlsProblem, creating: tlsDecision.create.length > 0,
    secret,
    replicas: (own.statefulSet?.spec as { replicas?: number } | undefined)?.replicas ?? 0,
    requested: cr.metadata.annotations?.[config.tls.rotateCaAnnotation],
    clientUrl: (pod) => ctx.memberAddresses?.client(namespace, pod, identity) ?? clientUrl(identity, pod, namespace, config, tls.client),
  });
  const membershipDecision = await membershipStep(
    membershipReader(ctx.client, config, own, {
      addresses: ctx.memberAddresses, timeoutMs: ctx.memberTimeoutMs, term: ctx.term, now: ctx.now, tls, clientTls: identities?.root ?? tlsDecision.clientTls,
    }), cr, resource, detectOnly,
  );
  const membership = membershipDecision && await actOnMembership(ctx, key, membershipDecision);
  const previouslyGenerated = new Set(((cr.status as DistributedKVStatus | undefined)?.generatedObjects ?? []).map((g: GeneratedObject) => `${g.kind}/${g.name}`));
  // A cluster that ran without a NetworkPolicy keeps running without one until its spec enables it (network-policy-adoption.ts).
  const policyName = `NetworkPolicy/${identity.networkPolicyName}`;
  const networkPolicy = decideNetworkPolicy({
    spec: resource.spec,
    config,
    recorded: (cr.status as DistributedKVStatus | undefined)?.networkPolicy,
    // Whoever applied it (this controller, an earlier one, or a GitOps tool from `dkv synth`): its members run.
    // Status lists it too where a shard's cache does not show it.
    statefulSetExists: Boolean(ctx.owned.get('apps/v1/StatefulSet')?.get(`${namespace}/${identity.statefulSetName}`)) || owned.some((o) => o.kind === 'StatefulSet')
      || previouslyGenerated.has(`StatefulSet/${identity.statefulSetName}`),
    // One of that name with the cluster's labels (ours, or applied from `dkv synth` output) already restricts the members.
    policyApplied: Boolean(ctx.owned.get('networking.k8s.io/v1/NetworkPolicy')?.get(`${namespace}/${identity.networkPolicyName}`))
      || owned.some((o) => o.kind === 'NetworkPolicy') || previouslyGenerated.has(policyName) || ctx.memory.object(key, policyName).appliedHash !== undefined,
  });
  // Monitoring on, but no PodMonitor kind served (the Prometheus Operator's CRDs absent): the cluster is reconciled without it (pod-monitor-step.ts).
  const podMonitorWanted = hasPodMonitor(config);
  const podMonitor = decidePodMonitor({
    wanted: podMonitorWanted,
    served: podMonitorWanted ? await (ctx.podMonitorsServed ?? (() => servesKind(ctx.client, 'monitoring.coreos.com/v1', 'podmonitors')))() : undefined,
  });
  let desired: KubeObject[];
  try {
    // While volumes grow, the members' quota is the one their volumes have room for (storage-step.ts).
    // Running members keep the scheme they run (model/tls.ts): a cluster created before TLS stays plain.
    desired = synthesizeCluster(resource, config, membership?.plan, {
      backupsSuspended: fleet ? fleet.role === 'standby' : undefined, volumeSizeNow: volumeSizeOf(own.statefulSet), tls: tlsPlanned.render,
      networkPolicyWithheld: networkPolicy.state === 'Withheld', podMonitorWithheld: podMonitor.withhold,
    });
  } catch (e) {
    if (!(e instanceof InvalidConfigError)) throw e;
    return refuse(ctx, cr, key, owned, 'InvalidConfig', e.problems.map(formatProblem).join('; '));
  }
  // cert-manager not installed: its Certificates wait for it, said in TLSSecretsReady (cert-manager-tls-step.ts).
  if (certManager?.withholdCertificates) desired = desired.filter((o) => !(o.apiVersion === 'cert-manager.io/v1' && o.kind === 'Certificate'));
  const now = ctx.now();
  ctx.memory.retain(key, new Set(desired.map(objectName)), now);

  // The live objects: from the cache. On a miss (the cache holds only objects with our labels, a shard's
  // only its buckets'), a new cluster's object is created if absent, and the API server says whether it
  // was (create-if-absent.ts): nothing is read first. Read are the names that may well be taken: one a
  // create found taken, one this process wrote whose write the cache has not shown yet (a quick second
  // reconcile), one the cluster's status lists (deleted, or hidden from the cache by new labels: the
  // checks below must see it before anything is written); and every miss of a detect-only cluster.
  const live = new Map<string, CachedObject | undefined>();
  await Promise.all(desired.map(async (object) => {
    const name = objectName(object);
    const cached = ctx.owned.get(cacheKind(object))?.get(`${object.metadata.namespace}/${object.metadata.name}`);
    const memory = cached ? undefined : ctx.memory.object(key, name);
    const read = memory !== undefined && (detectOnly || memory.nameTaken === true || memory.appliedHash !== undefined || previouslyGenerated.has(name));
    const found = read ? await readObject(ctx.client, object) : undefined;
    if (read && !found) memory!.nameTaken = false;
    live.set(name, cached ?? found);
  }));

  // The StatefulSet this reconcile began with (own.statefulSet, read before the membership calls) is gone or another one
  // now: deleted meanwhile, as the storage step's replacement does. What was rendered from it (the members' quota, from
  // its volumes' size) is stale, and writing it would create the replacement with that: look again at once instead.
  const liveStatefulSet = live.get(objectName(desired.find((o) => o.kind === 'StatefulSet')!));
  if (own.statefulSet && liveStatefulSet?.metadata.uid !== own.statefulSet.metadata.uid) {
    ctx.log.info('the StatefulSet changed during the reconcile: looking again', { key });
    return { requeueAfterMs: 0 };
  }

  // The shard bucket goes on what this cluster creates or controls, not on objects another tool
  // applied from `dkv synth` output (those are left unwritten while identical), nor in detect-only mode.
  if (!detectOnly) {
    desired = desired.map((o) => {
      const current = live.get(objectName(o));
      return !current || controllingOwner(current)?.uid === cr.metadata.uid ? withBucketLabel(o, cr.metadata.uid!, config) : o;
    });
  }

  // Day-2: volumes grow claim by claim; the StatefulSet keeps its volume template until it is replaced.
  const desiredStatefulSet = desired.find((o) => o.kind === 'StatefulSet')!;
  const storage = await storageStep(storageReader(ctx.client), cr, desiredStatefulSet, live.get(objectName(desiredStatefulSet)), detectOnly, hashAnnotation);
  if (storage.write) await makeStorageWrite(ctx, storage.write);
  if (storage.step.kind === 'refused') return refuse(ctx, cr, key, owned, 'StorageChangeRefused', storage.step.message);
  desired = desired.map((o) => (o === desiredStatefulSet ? storage.statefulSet : o));
  if (storage.changed) {
    await ctx.events.record({ apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata as never }, 'Normal', 'StorageResizing', storage.changed);
    ctx.log.info('storage growth', { key, change: storage.changed });
  }
  // The StatefulSet was just deleted (its pods left running): the next reconcile creates it with the new template.
  if (storage.step.kind === 'replaceStatefulSet') return { requeueAfterMs: storage.requeueAfterMs };

  const fullPlan = planWrites({
    desired, live, owned, now, detectOnly,
    clusterUid: cr.metadata.uid!,
    hashAnnotation,
    fieldManager: config.controller.fieldManager,
    previouslyGenerated,
    memoryOf: (name) => ctx.memory.object(key, name),
  });
  // A new cluster whose Secrets cert-manager has not written (or wrote wrong) gets no members yet: everything else, its Certificates first.
  const holdMembers = certManager?.holdMembers === true && !live.get(objectName(desiredStatefulSet));
  const plan = holdMembers ? { ...fullPlan, writes: fullPlan.writes.filter((w) => w.desired.kind !== 'StatefulSet') } : fullPlan;

  const statefulSet = desired.find((o) => o.kind === 'StatefulSet')!;
  if (!plan.conflicts.some((c) => c.object === objectName(statefulSet))) {
    const liveStatefulSet = live.get(objectName(statefulSet));
    const ownedStatefulSets = owned.filter((o) => o.kind === 'StatefulSet');
    if (!liveStatefulSet) ownedStatefulSets.push(...await formerStatefulSets(ctx, cr, statefulSet));
    const changing = liveStatefulSet?.metadata.annotations?.[hashAnnotation] !== statefulSet.metadata.annotations?.[hashAnnotation];
    const refused = refusedStatefulSetChanges(statefulSet, changing ? liveStatefulSet : undefined, ownedStatefulSets, config.controller.fieldManager);
    if (refused.length > 0) return refuse(ctx, cr, key, owned, 'ConfigChangeRefused', refused.join('; '));
  }

  const outcome = await executeWrites(ctx, cr, key, plan, detectOnly);
  const identitiesAgainMs = identities?.active && identitiesIssued
    ? await actOnClientIdentities(ctx, cr, key, identities, { identity, size: resource.spec.size, issued: identitiesIssued, membersRun: Boolean(own.statefulSet), labels: identity.serverLabels })
    : undefined;
  // Day-2: one maintenance step (defragmentation, NOSPACE recovery), once this reconcile's own changes are made.
  const storageUnderWay = storage.step.kind === 'resizeClaim' || storage.step.kind === 'waiting' ? storage.step.message : undefined;
  const maintenanceDecision = membership && maintenanceStep({
    config, resource, previous: cr.status as DistributedKVStatus | undefined, membership, storageStep: storageUnderWay, volumeSizeNow: volumeSizeOf(own.statefulSet),
    compacted: ctx.memory.compaction(key), detectOnly: detectOnly || outcome.failures.length > 0, now: ctx.now(),
  });
  const maintenance = maintenanceDecision && await actOnMaintenance(ctx, key, maintenanceDecision);
  const reported = await reportOutcome(ctx, {
    cr, key, size: resource.spec.size, desired, live, plan, outcome, membership, storage: storage.step, maintenance, networkPolicy, monitoring: podMonitor.condition,
    tls: migrationStatus(
      withRotation({ ...tlsDecision.status, ...(tlsProblem ? { reason: [tlsDecision.status.reason, tlsProblem].filter(Boolean).join('; ') } : {}) }, rotation),
      // Read again with the members: a Switching phase shows only in their peer URLs (the template is the final one already).
      config.engine === 'etcd' ? tlsMigration(migrationRead, membership?.members) : undefined,
    ), tlsProblem,
    certificateExpiring: rotation.certificateExpiring ?? certManager?.certificateExpiring, rotated: rotation.rotated, tlsSecrets: certManager?.condition,
  });

  if (outcome.failures.length > 0) throw new Error(`${outcome.failures.length} write(s) failed: ${outcome.failures.join('; ')}`);
  const holds = [...plan.held, ...outcome.fights].map((f) => f.until);
  const waits = [
    plan.conflicts.length > 0 ? ctx.objectConflictRecheckMs : undefined,
    holds.length > 0 ? Math.max(1000, Math.min(...holds) - ctx.now()) : undefined,
    membership?.requeueAfterMs,
    tlsPlanned.migration?.requeueAfterMs,
    maintenance?.requeueAfterMs,
    storage.requeueAfterMs,
    identitiesAgainMs,
    renewalRecheckMs(identities, ctx.now()),
    rotation.requeueAfterMs,
    // cert-manager's Secrets arriving enqueue the cluster (their labels); this is the safety net.
    certManager?.problem ? CERT_MANAGER_RECHECK_MS : undefined,
    // A create found its name taken: the next reconcile reads that object and decides whose it is, at once.
    outcome.taken.length > 0 ? 0 : undefined,
    // BackupStale turns True with nothing else changing: the cluster is looked at again then.
    reported.backupStaleAtMs === undefined ? undefined : Math.max(1000, reported.backupStaleAtMs - ctx.now() + 1000),
  ].filter((w): w is number => w !== undefined);
  return waits.length > 0 ? { requeueAfterMs: Math.min(...waits) } : {};
}

/** Makes the membership step's change; when the members (or the API server) refuse it, reports that it is not made yet. */
async function actOnMembership(ctx: ReconcileContext, key: string, decision: MembershipDecision): Promise<MembershipStepResult> {
  const { write } = decision;
  if (!write) return decision.result;
  try {
    await makeMemberWrite(ctx, key, write);
    return decision.result;
  } catch (e) {
    const error = (e as Error).message;
    if (write.kind === 'membership') ctx.log.warn('membership change refused or failed', { key, action: write.action.type, error });
    else if (write.kind === 'healing') ctx.log.warn('replacement step refused or failed', { key, action: write.action.type, error });
    else if (write.kind === 'recovery') ctx.log.warn('recovery step refused or failed', { key, action: write.action.type, error });
    else ctx.log.warn('upgrade step refused or failed', { key, action: write.kind === 'restartMember' ? 'deletePod' : write.kind, error });
    return membershipNotYet(decision, error);
  }
}

/**
 * Makes the maintenance step's call (a defragmentation waits until the member
 * is done: the next step, and every other change, waits for it); when the
 * member refuses it, reports that it is not made yet. A compaction etcd
 * answers "already compacted" was made, by an earlier controller or etcd's
 * own auto-compaction.
 */
async function actOnMaintenance(ctx: ReconcileContext, key: string, decision: MaintenanceDecision): Promise<MaintenanceStepResult> {
  const { write } = decision;
  if (!write) return decision.result;
  const { action, via } = write;
  const started = ctx.now();
  try {
    switch (action.type) {
      case 'defragment': await via.defragment(action.pod); break;
      case 'moveLeader': await via.moveLeader(action.toId); break;
      case 'compact':
        await via.compact(action.revision).catch((e: Error) => {
          if (!/required revision has been compacted/.test(e.message)) throw e;
        });
        ctx.memory.compacted(key, action.revision, started);
        break;
      case 'disarm': for (const alarm of action.alarms) await via.disarm(alarm); break;
    }
    ctx.log.info('maintenance', { key, change: decision.result.changed, ms: ctx.now() - started });
    return decision.result;
  } catch (e) {
    const error = (e as Error).message;
    ctx.log.warn('maintenance step refused or failed', { key, action: action.type, error });
    return maintenanceNotYet(decision, error);
  }
}

/** Makes a final backup's step (final-backup.ts decides it): its Job, or its report and the end of the wait. */
async function actOnFinalBackup(ctx: ReconcileContext, cr: CachedObject, decision: FinalBackupDecision): Promise<ReconcileResult> {
  if (decision.kind === 'letGo') {
    await reportFinalBackup(ctx, cr, decision);
    await removeFinalizer(ctx, cr, ctx.config.backup.final.finalizer);
    return {};
  }
  if (decision.kind === 'startJob') {
    await createJob(ctx, decision.namespace, decision.job);
    await ctx.events.record({ apiVersion: API_VERSION, kind: KIND, metadata: cr.metadata }, 'Normal', 'FinalBackupStarted', decision.message);
  }
  return { requeueAfterMs: decision.requeueAfterMs };
}

/** The name-clash check's view of the caches: claimants from the cluster cache's name index, holders from the owned caches. */
function claimIndex(ctx: ReconcileContext): ClaimIndex {
  return {
    claimants: (claim) => ctx.clusters.byIndex(claim),
    holder: (claim) => {
      const [namespace, kind, ...name] = claim.split('/');
      const informer = [...ctx.owned.entries()].find(([k]) => k.endsWith(`/${kind}`))?.[1];
      const object = informer?.get(`${namespace}/${name.join('/')}`);
      return object ? controllingOwner(object)?.uid : undefined;
    },
  };
}

/**
 * StatefulSets this cluster generated under another name that the cache
 * cannot show (a configuration that changed the labels as well as the name
 * template): status says where to look, the live object decides. Asked only
 * when the desired StatefulSet does not exist, so never in steady state.
 */
async function formerStatefulSets(ctx: ReconcileContext, cr: CachedObject, desired: KubeObject): Promise<CachedObject[]> {
  const listed = ((cr.status as DistributedKVStatus | undefined)?.generatedObjects ?? []).filter((g) => g.kind === 'StatefulSet' && g.name !== desired.metadata.name);
  const found = await Promise.all(listed.map((g) => readObject(ctx.client, { ...desired, metadata: { ...desired.metadata, name: g.name } })));
  return found.filter((o): o is CachedObject => o !== undefined && ownershipOf(o, cr.metadata.uid!, undefined, ctx.config.hashAnnotation).ours);
}
