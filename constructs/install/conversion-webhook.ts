import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import type { GeneratorConfig } from '../../api/config.js';
import type { ControllerIdentity } from './controller-identity.js';
import { controllerSubject } from './controller-service-account.js';

/** The container port name the webhook Service targets. */
export const WEBHOOK_PORT_NAME = 'webhook';

export interface ConversionWebhookProps {
  readonly identity: ControllerIdentity;
  /** conversion.serviceName, .port and .certificateSecret. */
  readonly config: GeneratorConfig;
}

/**
 * Where the API server reaches the conversion webhook (the CRD's
 * clientConfig names this Service, port 443), and the one Secret the
 * controller keeps its CA and serving certificate in: `create` cannot be
 * limited to a name (it is in the body), so it has a rule of its own; reads
 * and updates are limited to the Secret's name.
 */
export class ConversionWebhook extends Construct {
  constructor(scope: Construct, id: string, props: ConversionWebhookProps) {
    super(scope, id);
    const { identity, config } = props;
    const labels = { ...identity.labels };
    new k8s.KubeService(this, 'Service', {
      metadata: { name: config.conversion.serviceName, namespace: identity.namespace, labels },
      spec: {
        type: 'ClusterIP',
        selector: { ...identity.selector },
        ports: [{ name: 'https', port: 443, targetPort: k8s.IntOrString.fromString(WEBHOOK_PORT_NAME), protocol: 'TCP' }],
      },
    });
    const metadata = { name: `${identity.name}-webhook-certificate`, namespace: identity.namespace, labels };
    new k8s.KubeRole(this, 'CertificateRole', {
      metadata,
      rules: [
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
        { apiGroups: [''], resources: ['secrets'], resourceNames: [config.conversion.certificateSecret], verbs: ['get', 'update'] },
      ],
    });
    new k8s.KubeRoleBinding(this, 'CertificateRoleBinding', {
      metadata: { ...metadata, labels: { ...labels } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: metadata.name },
      subjects: [controllerSubject(identity)],
    });
  }
}
