/**
 * The pure core of a reconcile: given the desired objects and the live ones,
 * what to write and why, what is someone else's, which fields another
 * writer keeps changing, and what to prune. No requests, no clock: the same
 * input plans the same writes, and unit tests say so.
 */
import type { KubeObject } from '../../model/kube-object.js';
import type { ObjectMemory } from '../memory/cluster-memory.js';
import { findDrift, type DriftedField } from './drift.js';
import type { CachedObject } from '../../kube/informer.js';
import type { ApplyReason } from '../process/metrics.js';
import { ownershipOf } from './ownership.js';
import { objectName } from './reconcile-context.js';

export interface PlannedWrite {
  readonly desired: KubeObject;
  readonly reason: ApplyReason;
  readonly drift: readonly DriftedField[];
  /**
   * No object of its name was seen: written only if there still is none
   * (create-if-absent.ts), so an object nobody looked at is never taken over.
   */
  readonly ifAbsent: boolean;
}

/** A desired object's name taken by an object that is not this cluster's. */
export interface ObjectConflict {
  /** `Kind/name`. */
  readonly object: string;
  readonly message: string;
}

/** A drifted field left alone because another writer keeps changing it (see field-fights.ts). */
export interface HeldField {
  /** `Kind/name`. */
  readonly object: string;
  readonly path: string;
  readonly manager?: string;
  /** When corrections resume (ms since the epoch). */
  readonly until: number;
}

export interface WritePlanInput {
  readonly desired: readonly KubeObject[];
  /** The live object of each desired one, by `Kind/name`; undefined when none was seen. */
  readonly live: ReadonlyMap<string, CachedObject | undefined>;
  /** The live objects this cluster controls (its owner reference). */
  readonly owned: readonly CachedObject[];
  readonly clusterUid: string;
  readonly hashAnnotation: string;
  readonly fieldManager: string;
  /** The cluster only reports: uncontrolled objects are a GitOps tool's, and compared. */
  readonly detectOnly: boolean;
  /** Objects the cluster's status listed (`Kind/name`): one missing now was deleted, not yet created. */
  readonly previouslyGenerated: ReadonlySet<string>;
  /** What this process remembers of an object: the hash it last applied, fields not kept, fights. */
  readonly memoryOf: (object: string) => ObjectMemory;
  /** Milliseconds since the epoch. */
  readonly now: number;
}

export interface WritePlan {
  readonly writes: readonly PlannedWrite[];
  readonly conflicts: readonly ObjectConflict[];
  readonly held: readonly HeldField[];
  /** Objects this cluster controls that the spec no longer asks for. */
  readonly prunable: readonly CachedObject[];
}

export function planWrites(input: WritePlanInput): WritePlan {
  const { hashAnnotation } = input;
  const writes: PlannedWrite[] = [];
  const conflicts: ObjectConflict[] = [];
  const held: HeldField[] = [];
  for (const object of input.desired) {
    const name = objectName(object);
    const current = input.live.get(name);
    const hash = object.metadata.annotations![hashAnnotation];
    if (!current) {
      const deleted = input.previouslyGenerated.has(name);
      writes.push({ desired: object, reason: deleted ? 'drift' : 'created', drift: deleted ? [{ path: '(object deleted)' }] : [], ifAbsent: true });
      continue;
    }
    // Someone else's object of this name: never written, never pruned.
    const ownership = ownershipOf(current, input.clusterUid, hash, hashAnnotation, input.detectOnly);
    if (!ownership.ours) {
      conflicts.push({ object: name, message: `${name} already exists and is not this cluster's (${ownership.owner}): rename the cluster or remove that object` });
      continue;
    }
    const memory = input.memoryOf(name);
    // Another hash on the live object is a spec change, unless this process already applied
    // the desired one: then another writer replaced it (a GitOps tool applying other content),
    // which is drift (the hash annotation among the drifted fields) and meets the fight brake.
    if (current.metadata.annotations?.[hashAnnotation] !== hash && memory.appliedHash !== hash) {
      writes.push({ desired: object, reason: 'spec-changed', drift: [], ifAbsent: false });
      continue;
    }
    const ignored = memory.notKept?.hash === hash ? memory.notKept.paths : undefined;
    const drift = findDrift(object, current, input.fieldManager).filter((f) => !ignored?.has(f.path));
    if (drift.length === 0) continue;
    const heldHere = drift.flatMap((f) => {
      const until = memory.fights.heldUntil(f.path, input.now);
      return until === undefined ? [] : [{ object: name, path: f.path, manager: f.manager, until }];
    });
    held.push(...heldHere);
    if (heldHere.length < drift.length) writes.push({ desired: object, reason: 'drift', drift, ifAbsent: false });
  }
  const desiredNames = new Set(input.desired.map(objectName));
  const prunable = input.owned.filter((o) => !desiredNames.has(objectName(o)));
  return { writes, conflicts, held, prunable };
}
