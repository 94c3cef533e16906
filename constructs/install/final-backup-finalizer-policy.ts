import { Construct } from 'constructs';
import { ApiObject } from 'cdk8s';
import type { GeneratorConfig } from '../../api/config.js';
import { PLURAL } from '../../api/crd.js';
import { API_GROUP } from '../../api/versions.js';
import type { ControllerIdentity } from './controller-identity.js';

/** Where MutatingAdmissionPolicy is GA and served by default: Kubernetes 1.36. */
export const ADMISSION_POLICY_API_VERSION = 'admissionregistration.k8s.io/v1';

export interface FinalBackupFinalizerPolicyProps {
  readonly identity: ControllerIdentity;
  /** backup.final.finalizer. */
  readonly config: GeneratorConfig;
  /** Only clusters created in this namespace: the one the controller watches. */
  readonly watchNamespace?: string;
}

/**
 * Puts the final-backup finalizer on a DistributedKV with backups as it is
 * created, in the API server's admission chain (a MutatingAdmissionPolicy:
 * CEL, in-process, no webhook to run), instead of the controller adding it
 * with a write of its own after the create. Two gains: one write fewer per
 * new cluster with backups (an apply to the custom resource, which the API
 * server checks against the CRD's schema and rules and sends as a watch
 * event to every controller: at 10,000 clusters the single leader took
 * 1.10x the necessary writes' time with this policy, 1.32x without:
 * docs/performance.md), and no window in which such a cluster exists without the
 * finalizer that holds its deletion for the final backup.
 *
 * On creation only: the controller still adds the finalizer when backups are
 * turned on later, removes it when they are turned off, and adds it where
 * this policy is not installed or not in force; it writes only when the
 * finalizer it wants is missing (reconciler/day2/final-backup.ts). So the policy
 * is an optimisation the controller never depends on, and `failurePolicy:
 * Ignore` lets a create through if the policy cannot run.
 *
 * `admissionregistration.k8s.io/v1` is GA in Kubernetes 1.36; before that
 * the kind is beta and off by default, which is why `dkv install` adds this
 * only when asked (`--finalizer-policy`).
 */
export class FinalBackupFinalizerPolicy extends Construct {
  constructor(scope: Construct, id: string, props: FinalBackupFinalizerPolicyProps) {
    super(scope, id);
    const { identity, config, watchNamespace } = props;
    const name = `${identity.name}-final-backup-finalizer`;
    const labels = { ...identity.labels };
    // A finalizer is a qualified name: no character that needs escaping in a CEL string beyond what JSON escapes.
    const finalizer = JSON.stringify(config.backup.final.finalizer);
    new ApiObject(this, 'Policy', {
      apiVersion: ADMISSION_POLICY_API_VERSION,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name, labels },
      spec: {
        failurePolicy: 'Ignore',
        reinvocationPolicy: 'Never',
        matchConstraints: {
          resourceRules: [{ apiGroups: [API_GROUP], apiVersions: ['*'], operations: ['CREATE'], resources: [PLURAL] }],
        },
        // Every served version has spec.backup; a create that already names the finalizer is left as it is.
        matchConditions: [{
          name: 'has-backups-without-the-finalizer',
          expression: `has(object.spec.backup) && !(has(object.metadata.finalizers) && ${finalizer} in object.metadata.finalizers)`,
        }],
        mutations: [{
          // Finalizers are a set under server-side apply: this adds one entry and keeps any the creator set.
          patchType: 'ApplyConfiguration',
          applyConfiguration: { expression: `Object{metadata: Object.metadata{finalizers: [${finalizer}]}}` },
        }],
      },
    });
    new ApiObject(this, 'Binding', {
      apiVersion: ADMISSION_POLICY_API_VERSION,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name, labels: { ...labels } },
      spec: {
        policyName: name,
        ...(watchNamespace ? { matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': watchNamespace } } } } : {}),
      },
    });
  }
}
