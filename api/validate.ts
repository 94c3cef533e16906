import type { ValidateFunction } from 'ajv';
import type { DistributedKV, DistributedKVSpec } from '../imports/distributedkv.js';
import * as specValidators from '../imports/spec-validators.js';
import { FORMER_PLACEHOLDER_IMAGE } from '../model/backup-runner-image.js';
import { nameProblems } from '../model/cluster-identity.js';
import type { GeneratorConfig } from './config.js';
import { cronProblems } from './cron.js';
import { maintenanceProblems } from './maintenance-problems.js';
import { networkPolicyProblems } from './network-policy-problems.js';
import { clientProblems } from './client-problems.js';
import { certManagerProblems } from './cert-manager-problems.js';
import { etcdImageProblems } from '../engines/etcd/versions.js';
import { convertOwnCopy, schemaVersionedFields } from './conversion.js';
import { SCHEMA } from './schema.js';
import {
  API_GROUP, missingFrom, SERVED_VERSIONS, STORAGE_VERSION, servedVersionOf, type ServedVersion,
} from './versions.js';
import { fieldProblems, unknownFieldMessage, type FieldProblem } from './schema-errors.js';

export { API_GROUP, SCHEMA };
/** The storage version's apiVersion: what the controller reads and writes, and what validation hands on. */
export const API_VERSION = `${API_GROUP}/${STORAGE_VERSION}`;
export const KIND = 'DistributedKV';

/** A DistributedKV whose spec passed validation, with schema defaults filled in, in the storage version. */
export interface ValidResource extends DistributedKV {
  readonly metadata: DistributedKV['metadata'] & { readonly name: string };
  readonly spec: DistributedKVSpec;
}

export type ValidationResult =
  | { readonly valid: true; readonly resource: ValidResource }
  | { readonly valid: false; readonly problems: readonly FieldProblem[] };

/** The spec validator of one served version (each version's schema derives from SCHEMA), compiled at build time (api/validator-code.ts). */
function specValidator(version: ServedVersion): ValidateFunction<DistributedKVSpec> {
  return specValidators[version] as ValidateFunction<DistributedKVSpec>;
}

/** Fields present in `doc` that its version does not have: set in a newer version's file only. */
function newerFieldsIn(doc: Record<string, any>, version: ServedVersion): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const field of schemaVersionedFields()) {
    if (!missingFrom(field, version)) continue;
    let parent: any = doc;
    for (const segment of field.path.slice(0, -1)) parent = parent?.[segment];
    if (parent && typeof parent === 'object' && Object.hasOwn(parent, field.path[field.path.length - 1])) {
      problems.push({ segments: [...field.path], message: `exists in ${API_GROUP}/${field.since} and later only: set apiVersion: ${API_GROUP}/${field.since} to use it` });
    }
  }
  return problems;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The object's own fields (apiVersion, kind, metadata, spec, status), the candidates an unknown top-level field is compared with. */
const TOP_LEVEL_FIELDS = Object.keys(SCHEMA.properties).map((name) => ({ name }));

/**
 * Validates one DistributedKV document exactly as `dkv synth`, `dkv validate`
 * and the controller do: the schema (with defaults applied to a copy), the
 * name rules of the generated objects, the cron ranges, what etcd would
 * make of the maintenance settings (maintenance-problems.ts), the network
 * policy's label selectors (network-policy-problems.ts), the client
 * identities' names and prefixes (client-problems.ts), and whether the
 * configured engine can run the image at all and take the backups asked for. A document of any served
 * version is checked against that version's schema (a v1beta1-only field
 * in a v1alpha1 file is an unknown field there) and handed on converted to
 * the storage version. Returns every problem found, never only the first.
 */
export function validateDistributedKV(document: unknown, config: GeneratorConfig): ValidationResult {
  const problems: FieldProblem[] = [];
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return { valid: false, problems: [{ segments: [], message: 'must be a YAML mapping (a DistributedKV object)' }] };
  }
  const doc = structuredClone(document) as Record<string, any>;
  const version = servedVersionOf(doc.apiVersion);
  if (version === undefined) {
    const served = SERVED_VERSIONS.map((v) => JSON.stringify(`${API_GROUP}/${v}`)).reverse().join(' or ');
    problems.push({ segments: ['apiVersion'], message: `must be ${served} (got ${JSON.stringify(doc.apiVersion)})` });
  }
  if (doc.kind !== KIND) problems.push({ segments: ['kind'], message: `must be ${JSON.stringify(KIND)} (got ${JSON.stringify(doc.kind)})` });
  const metadata = doc.metadata;
  if (typeof metadata !== 'object' || metadata === null) {
    problems.push({ segments: ['metadata'], message: 'required field is missing' });
  } else {
    if (typeof metadata.name !== 'string') {
      problems.push({ segments: ['metadata', 'name'], message: 'required field is missing' });
    } else {
      for (const message of nameProblems(metadata.name, config)) problems.push({ segments: ['metadata', 'name'], message });
    }
    if (metadata.namespace !== undefined && (typeof metadata.namespace !== 'string' || !DNS1123_LABEL.test(metadata.namespace) || metadata.namespace.length > 63)) {
      problems.push({ segments: ['metadata', 'namespace'], message: `must be a DNS-1123 label of at most 63 characters (got ${JSON.stringify(metadata.namespace)})` });
    }
  }
  if (doc.spec === undefined) {
    problems.push({ segments: ['spec'], message: 'required field is missing' });
  } else {
    const validate = specValidator(version ?? STORAGE_VERSION);
    const newer = version === undefined ? [] : newerFieldsIn(doc, version);
    if (!validate(doc.spec)) {
      // A field of a newer version is named as such, not as a misspelling.
      const named = new Set(newer.map((p) => p.segments.join('.')));
      problems.push(...fieldProblems(validate.errors, ['spec']).filter((p) => !named.has(p.segments.join('.'))));
    }
    problems.push(...newer);
    const schedule = doc.spec?.backup?.schedule;
    const scheduleReported = problems.some((p) => p.segments.join('.') === 'spec.backup.schedule');
    if (typeof schedule === 'string' && !scheduleReported) {
      for (const message of cronProblems(schedule)) problems.push({ segments: ['spec', 'backup', 'schedule'], message });
    }
    problems.push(...maintenanceProblems(doc.spec, config.engine, problems));
    problems.push(...networkPolicyProblems(doc.spec, problems));
    problems.push(...clientProblems(doc.spec, problems));
    if (config.engine !== 'etcd' && doc.spec?.clients !== undefined) {
      problems.push({ segments: ['spec', 'clients'], message: `the ${config.engine} engine has no client identities: they are etcd users and roles; leave spec.clients out` });
    }
    // Engine knowledge the schema cannot hold (engines/etcd/versions.ts is pure, so the api layer may ask it).
    if (config.engine === 'etcd' && typeof doc.spec?.image === 'string') {
      for (const message of etcdImageProblems(doc.spec.image)) problems.push({ segments: ['spec', 'image'], message });
    }
    // `dkv restore` restores etcd members only (engines/etcd/restore.ts).
    if (config.engine !== 'etcd' && doc.spec?.restore !== undefined) {
      problems.push({ segments: ['spec', 'restore'], message: `the ${config.engine} engine cannot restore a backup: dkv restore restores etcd members only` });
    }
    const tlsMode = doc.spec?.tls?.mode;
    if (tlsMode === 'cert-manager') {
      problems.push(...certManagerProblems(doc, config));
    } else if (config.engine !== 'etcd' && tlsMode === 'operator') {
      problems.push({ segments: ['spec', 'tls', 'mode'], message: `the ${config.engine} engine has no TLS settings: its members run what its image serves; use disabled or leave spec.tls out` });
    }
    // Without a runner of its own the backup CronJob runs `dkv backup`, which speaks etcd's protocol: every run would fail.
    // (A backupImage of the wrong type or empty is the schema's to report.)
    const backup = doc.spec?.backup;
    if (config.engine !== 'etcd' && typeof backup === 'object' && backup !== null && (backup.backupImage === undefined || backup.backupImage === FORMER_PLACEHOLDER_IMAGE)) {
      const got = backup.backupImage === undefined ? '' : ` (got ${JSON.stringify(backup.backupImage)}, the former placeholder, which runs dkv backup)`;
      problems.push({ segments: ['spec', 'backup', 'backupImage'], message: `required with the ${config.engine} engine: the default runner, dkv backup, backs up etcd members only; name a backup runner of your own${got}` });
    }
  }
  for (const key of Object.keys(doc)) {
    if (!Object.hasOwn(SCHEMA.properties, key)) problems.push({ segments: [key], message: unknownFieldMessage([], key, TOP_LEVEL_FIELDS) });
  }
  if (problems.length > 0) return { valid: false, problems };
  // `doc` is this call's own copy (made above), so it is converted as it stands rather than copied again.
  return { valid: true, resource: convertOwnCopy(doc, STORAGE_VERSION) as ValidResource };
}
