/**
 * spec.tls.mode cert-manager in the generator (constructs/certificates.ts,
 * docs/security.md, "cert-manager"): what `dkv synth` writes (cert-manager
 * Certificates for the Secrets the operator mode issues, same names, the
 * same names and usages as the operator mode's leaves, no key anywhere), and
 * what `dkv validate` refuses, naming file and field.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type GeneratorConfig } from '../../api/config.js';
import { validateDistributedKV } from '../../api/validate.js';
import { InputError } from '../../api/problem.js';
import { CLIENT_CERTIFICATE_REQUEST, memberCertificateRequest } from '../../engines/etcd/certificate-requests.js';
import { renewBeforePercentage } from '../../constructs/certificates.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { BACKUP, byRole, CLI_TIMEOUT_MS, DEFAULT_CONFIG, dkv, kvDocument, removeTemporaryDirectories, ROOT, synth, temporaryDirectory, type Manifest } from './support.js';

const withIssuer = (issuerRef: Partial<GeneratorConfig['tls']['certManager']['issuerRef']> = { name: 'shop-ca' }): GeneratorConfig => ({
  ...DEFAULT_CONFIG, tls: { ...DEFAULT_CONFIG.tls, certManager: { issuerRef: { ...DEFAULT_CONFIG.tls.certManager.issuerRef, ...issuerRef } } },
});
const certificates = (objects: Manifest[]) => objects.filter((o) => o.kind === 'Certificate');
const certManager = { tls: { mode: 'cert-manager' } };

afterAll(removeTemporaryDirectories);

describe('the Certificates of a cluster with spec.tls.mode cert-manager', () => {
  const objects = synth({ ...certManager, backup: BACKUP }, withIssuer());
  const [member, client] = certificates(objects);

  it('are two cert-manager.io/v1 Certificates, into the Secrets the operator mode issues, with the cluster\'s labels on the Secrets too', () => {
    expect(certificates(objects).map((c) => [c.apiVersion, c.metadata.name, c.spec.secretName])).toEqual([
      ['cert-manager.io/v1', 'orders-tls-member', 'orders-tls-member'],
      ['cert-manager.io/v1', 'orders-tls-client', 'orders-tls-client'],
    ]);
    const labels = clusterIdentity('orders', DEFAULT_CONFIG).serverLabels;
    for (const c of [member, client]) {
      expect(c.metadata.namespace).toBe('shop');
      expect(c.spec.secretTemplate).toEqual({ labels });
      expect(c.metadata.labels).toEqual(expect.objectContaining(labels));
      expect(c.spec.issuerRef).toEqual({ name: 'shop-ca', kind: 'Issuer', group: 'cert-manager.io' });
    }
  });

  it('ask for the names and usages the operator mode\'s leaves carry: every address of every member, server and client usage; the client certificate client usage only', () => {
    const request = memberCertificateRequest(clusterIdentity('orders', DEFAULT_CONFIG), 'shop', DEFAULT_CONFIG);
    expect(member.spec.commonName).toBe(request.commonName);
    expect(member.spec.dnsNames).toEqual(request.dnsNames);
    expect(member.spec.dnsNames).toEqual(expect.arrayContaining(['orders-0.orders-peers', 'orders-8.orders-peers.shop.svc.cluster.local', 'orders', 'orders.shop.svc.cluster.local']));
    expect(member.spec.ipAddresses).toEqual(['127.0.0.1', '::1']);
    expect(member.spec.usages).toEqual(['digital signature', 'key encipherment', 'server auth', 'client auth']);
    expect(client.spec.commonName).toBe(CLIENT_CERTIFICATE_REQUEST.commonName);
    expect(client.spec.dnsNames).toBeUndefined();
    expect(client.spec.usages).toEqual(['digital signature', 'key encipherment', 'client auth']);
  });

  it('are valid certificateValidityDays and renewed by cert-manager once renewalFraction of that has passed (renewBeforePercentage), a new PKCS#8 RSA key each time', () => {
    expect(member.spec.duration).toBe('8760h');
    expect(member.spec.renewBeforePercentage).toBe(33);
    expect(renewBeforePercentage(0.6667)).toBe(33);
    expect(renewBeforePercentage(0.5)).toBe(50);
    expect(renewBeforePercentage(0.95)).toBe(5);
    expect(member.spec.privateKey).toEqual({ algorithm: 'RSA', size: 2048, encoding: 'PKCS8', rotationPolicy: 'Always' });
  });

  it('name a ClusterIssuer, or an external issuer\'s group, as the configuration says', () => {
    const [c] = certificates(synth(certManager, withIssuer({ name: 'corp-ca', kind: 'ClusterIssuer', group: 'awspca.cert-manager.io' })));
    expect(c.spec.issuerRef).toEqual({ name: 'corp-ca', kind: 'ClusterIssuer', group: 'awspca.cert-manager.io' });
  });

  it('leave everything else as the operator mode renders it, but the CRL the controller alone writes: the same Secrets mounted, the same flags', () => {
    const operator = byRole(synth({ backup: BACKUP }));
    const ours = byRole(objects);
    const args = ours.statefulSet.spec.template.spec.containers[0].args as string[];
    expect(args.filter((a) => !a.includes('crl-file'))).toEqual(args);
    expect(args).toEqual((operator.statefulSet.spec.template.spec.containers[0].args as string[]).filter((a) => !a.includes('crl-file')));
    expect(ours.statefulSet.spec.template.spec.volumes).toEqual(operator.statefulSet.spec.template.spec.volumes);
    expect(ours.cronJob!.spec.jobTemplate.spec.template.spec.volumes).toEqual(operator.cronJob!.spec.jobTemplate.spec.template.spec.volumes);
  });

  it('hold no Secret and no private key: dkv synth\'s output can go to Git', () => {
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    expect(JSON.stringify(objects)).not.toMatch(/PRIVATE KEY|BEGIN CERTIFICATE/);
  });

  it('are not written in mode operator or disabled, nor for a cluster whose listeners both run plain', () => {
    for (const spec of [{}, { tls: { mode: 'operator' } }, { tls: { mode: 'disabled' } }, { tls: { mode: 'cert-manager', peer: { enabled: false }, client: { enabled: false } } }]) {
      expect(certificates(synth(spec, withIssuer()))).toEqual([]);
    }
  });
});

describe('spec.tls.mode cert-manager refused', () => {
  const paths = (document: Record<string, unknown>, config: GeneratorConfig) => {
    const result = validateDistributedKV(document, config);
    return result.valid ? [] : result.problems.map((p) => [p.segments.join('.'), p.message]);
  };

  it('without an issuer in the configuration, naming the configuration\'s field', () => {
    const [[path, message]] = paths(kvDocument(certManager), DEFAULT_CONFIG);
    expect(path).toBe('spec.tls.mode');
    expect(message).toContain('tls.certManager.issuerRef.name');
    expect(message).toContain('dkv.config.yaml');
  });

  it('without a namespace: the members\' DNS names in the certificate contain it', () => {
    expect(paths(kvDocument({ ...certManager, namespace: '' }), withIssuer()).map(([p]) => p)).toEqual(['metadata.namespace']);
  });

  it('with a name whose members\' common name cert-manager\'s webhook would refuse (over 64 characters)', () => {
    const long = 'a'.repeat(40);
    const problems = paths(kvDocument({ ...certManager, name: long, namespace: 'b'.repeat(30) }), withIssuer());
    expect(problems.map(([p]) => p)).toEqual(['metadata.name']);
    expect(problems[0][1]).toContain('71 characters');
    expect(paths(kvDocument({ ...certManager, name: long, namespace: 'b'.repeat(23) }), withIssuer())).toEqual([]);
  });

  it('with client identities, which the controller issues from a CA of its own', () => {
    const problems = paths(kvDocument({ ...certManager, clients: [{ name: 'web', prefix: '/web/' }] }), withIssuer());
    expect(problems.map(([p]) => p)).toEqual(['spec.clients']);
    expect(problems[0][1]).toContain('mode operator');
  });

  it('by dkv validate, naming the spec file, the field, and the configuration file and its field', () => {
    const dir = temporaryDirectory();
    mkdirSync(join(dir, 'specs'));
    writeFileSync(join(dir, 'specs', 'orders.yaml'), [
      'apiVersion: example.com/v1beta1', 'kind: DistributedKV', 'metadata: {name: orders, namespace: shop}',
      'spec: {size: 3, image: registry.k8s.io/etcd:3.6.8-0, tls: {mode: cert-manager}}', '',
    ].join('\n'));
    writeFileSync(join(dir, 'kv.config.yaml'), 'tls:\n  certManager:\n    issuerRef:\n      kind: ClusterIssuer\n');
    const result = dkv(['validate', 'specs', '--config', 'kv.config.yaml'], dir);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('specs/orders.yaml: spec.tls.mode: cert-manager needs the issuer');
    expect(result.stderr).toContain('kv.config.yaml names none: set tls.certManager.issuerRef.name');
    writeFileSync(join(dir, 'kv.config.yaml'), 'tls:\n  certManager:\n    issuerRef:\n      name: corp-ca\n      kind: ClusterIssuer\n');
    expect(dkv(['validate', 'specs', '--config', 'kv.config.yaml'], dir).status).toBe(0);
  });
});

describe('dkv synth and a TLS cluster whose manifest already runs (cli/tls-provider-guard.ts)', () => {
  const workspace = () => {
    const dir = temporaryDirectory('dkv-tls-provider-');
    mkdirSync(join(dir, 'specs'));
    writeFileSync(join(dir, 'kv.config.yaml'), 'tls:\n  certManager:\n    issuerRef:\n      name: shop-ca\n');
    return dir;
  };
  const synthWith = (dir: string, mode: string) => {
    writeFileSync(join(dir, 'specs', 'orders.yaml'), [
      'apiVersion: example.com/v1beta1', 'kind: DistributedKV', 'metadata: {name: orders, namespace: shop}',
      `spec: {size: 3, image: registry.k8s.io/etcd:3.6.8-0, tls: {mode: ${mode}}}`, '',
    ].join('\n'));
    return dkv(['synth', '--specs', 'specs', '--out', 'out', '--config', 'kv.config.yaml'], dir);
  };
  const manifest = (dir: string) => readFileSync(join(dir, 'out', 'shop.orders.k8s.yaml'), 'utf8');

  it('refuses operator to cert-manager and back, naming file and field, and writes nothing', () => {
    for (const [from, to] of [['operator', 'cert-manager'], ['cert-manager', 'operator']]) {
      const dir = workspace();
      expect(synthWith(dir, from).status).toBe(0);
      const running = manifest(dir);
      const refused = synthWith(dir, to);
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain('specs/orders.yaml: spec.tls.mode: would move orders\'s certificates from');
      expect(refused.stderr).toContain(`keep spec.tls.mode: ${from}`);
      expect(manifest(dir)).toBe(running);
    }
  }, 2 * CLI_TIMEOUT_MS);

  it('renders a cert-manager cluster again unchanged', () => {
    const dir = workspace();
    expect(synthWith(dir, 'cert-manager').status).toBe(0);
    const first = manifest(dir);
    expect(first).toContain('kind: Certificate');
    expect(synthWith(dir, 'cert-manager').status).toBe(0);
    expect(manifest(dir)).toBe(first);
  }, CLI_TIMEOUT_MS);
});

describe('the configuration\'s tls.certManager', () => {
  it('keeps the default kind and group when a file names only the issuer', () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, 'kv.config.yaml'), 'tls:\n  certManager:\n    issuerRef:\n      name: shop-ca\n');
    expect(loadConfig(join(dir, 'kv.config.yaml')).tls.certManager.issuerRef).toEqual({ name: 'shop-ca', kind: 'Issuer', group: 'cert-manager.io' });
    expect(loadConfig(join(dir, 'kv.config.yaml')).tls.memberSecret).toBe(DEFAULT_CONFIG.tls.memberSecret);
  });

  it('refuses a kind cert-manager has no issuer of, naming the file and the field', () => {
    const dir = temporaryDirectory();
    const file = join(dir, 'kv.config.yaml');
    writeFileSync(file, 'tls:\n  certManager:\n    issuerRef:\n      name: shop-ca\n      kind: Vault\n');
    let error: unknown;
    try { loadConfig(file); } catch (e) { error = e; }
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).problems.map((p) => [p.file, p.path])).toEqual([[file, 'tls.certManager.issuerRef.kind']]);
  });

  it('names no issuer by default, so no cluster is rendered with cert-manager by accident', () => {
    expect(DEFAULT_CONFIG.tls.certManager.issuerRef).toEqual({ name: '', kind: 'Issuer', group: 'cert-manager.io' });
    expect(readFileSync(join(ROOT, 'dkv.config.yaml'), 'utf8')).toContain('certManager:');
  });
});
