/**
 * Conversion between the served versions, as pure functions: the webhook
 * (test/integration/conversion-webhook.test.ts proves it on the API
 * server) and `dkv synth` both call these.
 */
import { convertDistributedKV, PRESERVED_FIELDS_ANNOTATION } from '../../api/conversion.js';
import { customResourceDefinition } from '../../api/crd.js';
import { loadDefaultConfig } from '../../api/config.js';
import { SCHEMA } from '../../api/schema.js';
import { validateDistributedKV } from '../../api/validate.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { schemaForVersion, SINCE, STORAGE_VERSION, versionedFields } from '../../api/versions.js';
import { reviewResponse } from '../../conversion/webhook-server.js';

const config = loadDefaultConfig();

function v1alpha1(extra: Record<string, unknown> = {}): Record<string, any> {
  return {
    apiVersion: 'example.com/v1alpha1', kind: 'DistributedKV',
    metadata: { name: 'orders', namespace: 'shop', uid: 'u-1', resourceVersion: '7', labels: { team: 'a' } },
    spec: { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0', backup: { s3Path: 's3://b/p', schedule: '0 2 * * *' } },
    status: { readyReplicas: 3 },
    ...extra,
  };
}

function v1beta1(extra: Record<string, unknown> = {}): Record<string, any> {
  return v1alpha1({ apiVersion: 'example.com/v1beta1', ...extra });
}

describe('versions derived from the one schema', () => {
  it('finds spec.maintenance, spec.tls, spec.networkPolicy, spec.clients and spec.backup.retain as the fields v1beta1 added, and nothing else', () => {
    expect(versionedFields(SCHEMA)).toEqual([
      { path: ['spec', 'maintenance'], since: 'v1beta1' },
      { path: ['spec', 'tls'], since: 'v1beta1' },
      { path: ['spec', 'networkPolicy'], since: 'v1beta1' },
      { path: ['spec', 'clients'], since: 'v1beta1' },
      { path: ['spec', 'backup', 'retain'], since: 'v1beta1' },
    ]);
  });

  it('leaves the v1beta1-only fields out of v1alpha1 and keeps them in v1beta1', () => {
    expect(schemaForVersion(SCHEMA, 'v1alpha1').definitions.DistributedKVSpec.properties.backup.properties).not.toHaveProperty('retain');
    expect(schemaForVersion(SCHEMA, 'v1alpha1').definitions.DistributedKVSpec.properties).not.toHaveProperty('maintenance');
    expect(schemaForVersion(SCHEMA, 'v1beta1').definitions.DistributedKVSpec.properties.backup.properties.retain).toMatchObject({ type: 'integer', minimum: 1 });
    expect(schemaForVersion(SCHEMA, 'v1beta1').definitions.DistributedKVSpec.properties.maintenance).toMatchObject({ type: 'object' });
  });

  it('refuses a version mark inside an array, where no path could keep its value', () => {
    const schema = { properties: { list: { type: 'array', items: { properties: { x: { type: 'string', [SINCE]: 'v1beta1' } } } } } };
    expect(() => versionedFields(schema)).toThrow(/inside an array \(list\)/);
  });

  it('refuses a version mark naming a version that is not served', () => {
    expect(() => versionedFields({ properties: { x: { type: 'string', [SINCE]: 'v2' } } })).toThrow(/"v2" is not a served version/);
  });

  it('lists both versions in the CRD, v1beta1 first and stored, converted by the webhook Service', () => {
    const crd = customResourceDefinition(config) as any;
    expect(crd.spec.versions.map((v: any) => [v.name, v.served, v.storage])).toEqual([['v1beta1', true, true], ['v1alpha1', true, false]]);
    const backup = (v: any) => v.schema.openAPIV3Schema.properties.spec.properties.backup.properties;
    expect(backup(crd.spec.versions[0])).toHaveProperty('retain');
    expect(backup(crd.spec.versions[1])).not.toHaveProperty('retain');
    expect(JSON.stringify(crd)).not.toContain(`"${SINCE}":`); // the keyword, not the description that names it
    expect(crd.spec.conversion).toEqual({
      strategy: 'Webhook',
      webhook: { conversionReviewVersions: ['v1'], clientConfig: { service: { namespace: 'dkv-system', name: 'dkv-controller-webhook', path: '/convert', port: 443 } } },
    });
    const elsewhere = customResourceDefinition(config, { webhookNamespace: 'ops' }) as any;
    expect(elsewhere.spec.conversion.webhook.clientConfig.service.namespace).toBe('ops');
    const byUrl = customResourceDefinition({ ...config, conversion: { ...config.conversion, url: 'https://127.0.0.1:9443/convert' } }) as any;
    expect(byUrl.spec.conversion.webhook.clientConfig).toEqual({ url: 'https://127.0.0.1:9443/convert' });
  });
});

describe('convertDistributedKV', () => {
  it('round-trips a v1alpha1 object through v1beta1 unchanged, without adding an annotation', () => {
    const original = v1alpha1();
    const up = convertDistributedKV(original, 'v1beta1');
    expect(up.apiVersion).toBe('example.com/v1beta1');
    expect(up.metadata).toEqual(original.metadata);
    expect(JSON.stringify(convertDistributedKV(up, 'v1alpha1'))).toBe(JSON.stringify(original));
  });

  it('keeps a v1beta1-only field in the annotation on the way down and puts it back on the way up', () => {
    const beta = v1beta1();
    beta.spec.backup.retain = 12;
    const alpha = convertDistributedKV(beta, 'v1alpha1');
    expect(alpha.spec.backup).not.toHaveProperty('retain');
    expect(JSON.parse(alpha.metadata.annotations[PRESERVED_FIELDS_ANNOTATION])).toEqual({ 'spec.backup.retain': 12 });
    expect(alpha.metadata.labels).toEqual({ team: 'a' });
    expect(JSON.stringify(convertDistributedKV(alpha, 'v1beta1'))).toBe(JSON.stringify(beta));
    expect(beta.spec.backup.retain).toBe(12); // the input is left alone
  });

  it('keeps spec.clients, a list, in the annotation on the way down: a v1alpha1 client does not revoke every client identity', () => {
    const beta = v1beta1();
    beta.spec.clients = [{ name: 'app', prefix: '/app/', access: 'read' }];
    const alpha = convertDistributedKV(beta, 'v1alpha1');
    expect(alpha.spec).not.toHaveProperty('clients');
    expect(JSON.parse(alpha.metadata.annotations[PRESERVED_FIELDS_ANNOTATION])).toEqual({ 'spec.clients': [{ name: 'app', prefix: '/app/', access: 'read' }] });
    expect(JSON.stringify(convertDistributedKV(alpha, 'v1beta1'))).toBe(JSON.stringify(beta));
  });

  it('keeps the field through a v1alpha1 client\'s edit of another field, and keeps its own annotations', () => {
    const beta = v1beta1();
    beta.spec.backup.retain = 5;
    beta.metadata.annotations = { owner: 'team-a' };
    const edited = convertDistributedKV(beta, 'v1alpha1');
    edited.spec.size = 5;
    const back = convertDistributedKV(edited, 'v1beta1');
    expect(back.spec).toMatchObject({ size: 5, backup: { retain: 5 } });
    expect(back.metadata.annotations).toEqual({ owner: 'team-a' });
  });

  it('drops the preserved value when the v1alpha1 client removed its parent (backup off means no retention)', () => {
    const beta = v1beta1();
    beta.spec.backup.retain = 5;
    const edited = convertDistributedKV(beta, 'v1alpha1');
    delete edited.spec.backup;
    const back = convertDistributedKV(edited, 'v1beta1');
    expect(back.spec).not.toHaveProperty('backup');
    expect(back.metadata).not.toHaveProperty('annotations');
  });

  it('refuses an apiVersion this API does not serve', () => {
    expect(() => convertDistributedKV({ ...v1alpha1(), apiVersion: 'example.com/v2' }, 'v1beta1')).toThrow(/"example.com\/v2": not a served version/);
  });
});

describe('validation of either version', () => {
  it('accepts a v1alpha1 file and hands on the storage version', () => {
    const result = validateDistributedKV(v1alpha1({ status: undefined }), config);
    expect(result.valid && result.resource.apiVersion).toBe(`example.com/${STORAGE_VERSION}`);
  });

  it('refuses the v1beta1-only field in a v1alpha1 file, naming the field', () => {
    const doc = v1alpha1({ status: undefined });
    doc.spec.backup.retain = 3;
    const result = validateDistributedKV(doc, config);
    expect(result.valid).toBe(false);
    if (!result.valid) {
      expect(result.problems).toEqual([{ segments: ['spec', 'backup', 'retain'], message: 'exists in example.com/v1beta1 and later only: set apiVersion: example.com/v1beta1 to use it' }]);
    }
  });

  it('accepts it in a v1beta1 file, and the backup CronJob keeps that many', () => {
    const doc = v1beta1({ status: undefined });
    doc.spec.backup.retain = 3;
    const result = validateDistributedKV(doc, config);
    expect(result).toMatchObject({ valid: true, resource: { spec: { backup: { retain: 3 } } } });
    const cronJob = result.valid ? synthesizeCluster(result.resource, config).find((o) => o.kind === 'CronJob') as any : undefined;
    const env = cronJob.spec.jobTemplate.spec.template.spec.containers[0].env as { name: string; value?: string }[];
    expect(env.find((e) => e.name === 'DKV_BACKUP_RETAIN')?.value).toBe('3');
    expect(config.backup.retain).not.toBe(3);
  });

  it('names both versions when the apiVersion is neither', () => {
    const result = validateDistributedKV(v1alpha1({ apiVersion: 'example.com/v1', status: undefined }), config);
    expect(result.valid).toBe(false);
    if (!result.valid) expect(result.problems[0].message).toBe('must be "example.com/v1beta1" or "example.com/v1alpha1" (got "example.com/v1")');
  });
});

describe('reviewResponse (the webhook\'s answer)', () => {
  it('converts every object of a review and echoes its uid', () => {
    const review = { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'r-1', desiredAPIVersion: 'example.com/v1beta1', objects: [v1alpha1(), v1alpha1()] } };
    const response = reviewResponse(review) as any;
    expect(response.response.uid).toBe('r-1');
    expect(response.response.result).toEqual({ status: 'Success' });
    expect(response.response.convertedObjects.map((o: any) => o.apiVersion)).toEqual(['example.com/v1beta1', 'example.com/v1beta1']);
  });

  it('fails the review, naming the object, for a version it cannot convert', () => {
    const review = { kind: 'ConversionReview', request: { uid: 'r-2', desiredAPIVersion: 'example.com/v1beta1', objects: [{ ...v1alpha1(), apiVersion: 'example.com/v9' }] } };
    expect((reviewResponse(review) as any).response).toEqual({ uid: 'r-2', result: { status: 'Failure', message: expect.stringMatching(/^shop\/orders: cannot convert apiVersion "example.com\/v9"/) } });
  });

  it('fails a review that asks for a version not served', () => {
    const review = { kind: 'ConversionReview', request: { uid: 'r-3', desiredAPIVersion: 'example.com/v2', objects: [] } };
    expect((reviewResponse(review) as any).response.result.message).toMatch(/desiredAPIVersion "example.com\/v2" is not a version this controller serves/);
  });
});
