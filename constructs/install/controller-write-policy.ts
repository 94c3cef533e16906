import { Construct } from 'constructs';
import { ApiObject } from 'cdk8s';
import type { GeneratorConfig } from '../../api/config.js';
import { API_GROUP } from '../../api/versions.js';
import { KIND } from '../../api/validate.js';
import { ADMISSION_POLICY_API_VERSION } from './final-backup-finalizer-policy.js';
import type { ControllerIdentity } from './controller-identity.js';

export interface ControllerWritePolicyProps {
  readonly identity: ControllerIdentity;
  /** The labels every generated object carries (those without a `{...}` part are checked), the conversion webhook's Secret, the snapshot runners' ServiceAccount. */
  readonly config: GeneratorConfig;
}

/**
 * What the controller's ServiceAccount may write, object by object, where
 * RBAC cannot say it (docs/security.md, "The controller's reach"): RBAC
 * grants by resource and namespace, so in the default mode the controller
 * may write every Secret, StatefulSet, CronJob and Job of the cluster; a
 * compromised controller could then create a StatefulSet in kube-system
 * under any ServiceAccount, or a ServiceAccount token Secret it can list,
 * which amounts to cluster-admin. This ValidatingAdmissionPolicy (CEL, in
 * the API server, no webhook to run) refuses any such write by this
 * ServiceAccount unless the object is one a DistributedKV controls:
 *
 * - Secrets (create, update, delete): a controller owner reference to a
 *   DistributedKV and the project's fixed labels; of type Opaque or
 *   kubernetes.io/tls only. The conversion webhook's own Secret, in the
 *   controller's namespace, is the one exception (its name-scoped Role).
 * - StatefulSets and CronJobs (create, update, delete): the same owner and
 *   labels; Jobs: the labels and a CronJob as their controller (the final
 *   backup's Job, the CronJob's own runs).
 * - Every pod template they carry: no ServiceAccount token unless it is the
 *   snapshot runners' ServiceAccount the configuration names, no host
 *   namespaces, no hostPath volume, no privileged container.
 *
 * `failurePolicy: Fail`: the policy matches this ServiceAccount's requests
 * alone, so an evaluation error refuses only the controller's write, which
 * it retries. Bound in every namespace, whatever `--watch-namespace` says:
 * where RBAC already narrows the controller to one namespace, this narrows
 * it within it.
 */
export class ControllerWritePolicy extends Construct {
  constructor(scope: Construct, id: string, props: ControllerWritePolicyProps) {
    super(scope, id);
    const { identity, config } = props;
    const name = `${identity.name}-writes`;
    const labels = { ...identity.labels };
    const str = (s: string) => JSON.stringify(s);
    const fixedLabels = Object.entries(config.labels).filter(([, v]) => !v.includes('{'));
    const labelled = fixedLabels.length === 0 ? 'true'
      : fixedLabels.map(([k, v]) => `${str(k)} in variables.subject.metadata.?labels.orValue({}) && variables.subject.metadata.labels[${str(k)}] == ${str(v)}`).join(' && ');
    const ownedBy = (kind: string, group: string) => `variables.subject.metadata.?ownerReferences.orValue([]).exists(r, r.kind == ${str(kind)} && r.apiVersion.startsWith(${str(`${group}/`)}) && r.?controller.orValue(false))`;
    const snapshots = config.backup.volumeSnapshots.serviceAccountName;
    new ApiObject(this, 'Policy', {
      apiVersion: ADMISSION_POLICY_API_VERSION,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['secrets'] },
            { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['statefulsets'] },
            { apiGroups: ['batch'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE', 'DELETE'], resources: ['cronjobs', 'jobs'] },
          ],
        },
        matchConditions: [
          { name: 'the-controller', expression: `request.userInfo.username == ${str(`system:serviceaccount:${identity.namespace}:${identity.name}`)}` },
          // The conversion webhook's serving certificate: written by name, under a Role of its own.
          { name: 'not-the-webhook-secret', expression: `!(request.resource.resource == 'secrets' && request.namespace == ${str(identity.namespace)} && request.name == ${str(config.conversion.certificateSecret)})` },
        ],
        variables: [
          // What is written, or, for a delete, what is deleted.
          { name: 'subject', expression: "request.operation == 'DELETE' ? oldObject : object" },
          {
            name: 'pod',
            expression: "request.operation == 'DELETE' || request.resource.resource == 'secrets' ? null"
              + " : request.resource.resource == 'cronjobs' ? object.spec.?jobTemplate.?spec.?template.?spec.orValue(null)"
              + ' : object.spec.?template.?spec.orValue(null)',
          },
        ],
        validations: [
          { expression: labelled, message: `the controller writes only objects carrying the project's labels (${fixedLabels.map(([k, v]) => `${k}=${v}`).join(', ')})`, reason: 'Forbidden' },
          {
            expression: `request.resource.resource == 'jobs' ? ${ownedBy('CronJob', 'batch')} : ${ownedBy(KIND, API_GROUP)}`,
            message: `the controller writes only objects a ${KIND} controls (a Job: its CronJob)`, reason: 'Forbidden',
          },
          {
            expression: "request.resource.resource != 'secrets' || request.operation == 'DELETE' || object.?type.orValue('Opaque') in ['Opaque', 'kubernetes.io/tls']",
            message: 'the controller creates only Opaque and kubernetes.io/tls Secrets', reason: 'Forbidden',
          },
          {
            expression: `variables.pod == null || (
              (variables.pod.?automountServiceAccountToken.orValue(true) == false${snapshots ? ` || variables.pod.?serviceAccountName.orValue('') == ${str(snapshots)}` : ''})
              && !variables.pod.?hostNetwork.orValue(false) && !variables.pod.?hostPID.orValue(false) && !variables.pod.?hostIPC.orValue(false)
              && !variables.pod.?volumes.orValue([]).exists(v, has(v.hostPath))
              && !variables.pod.containers.exists(c, c.?securityContext.?privileged.orValue(false))
              && !variables.pod.?initContainers.orValue([]).exists(c, c.?securityContext.?privileged.orValue(false)))`,
            message: `the controller's workloads mount no ServiceAccount token (but the snapshot runners' ${snapshots || '(none configured)'}), use no host namespace or hostPath volume and run nothing privileged`,
            reason: 'Forbidden',
          },
        ],
      },
    });
    new ApiObject(this, 'Binding', {
      apiVersion: ADMISSION_POLICY_API_VERSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels: { ...labels } },
      spec: { policyName: name, validationActions: ['Deny'] },
    });
  }
}
