/**
 * spec.tls in the generator: what a member, the member ConfigMap and the
 * backup runner get for each TLS setting, and how a running cluster keeps
 * the scheme its members run (model/tls.ts).
 */
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { validateDistributedKV } from '../../api/validate.js';
import { tlsInEffect } from '../../model/tls.js';
import { liveTlsOf } from '../../engines/etcd/tls-files.js';
import { BACKUP, byRole, DEFAULT_CONFIG, kvDocument, synth, type Manifest } from './support.js';

const member = (objects: Manifest[]) => byRole(objects).statefulSet.spec.template.spec.containers[0];
const podSpec = (objects: Manifest[]) => byRole(objects).statefulSet.spec.template.spec;
const flag = (args: readonly string[], name: string) => args.find((a) => a === `--${name}` || a.startsWith(`--${name}=`));

describe('TLS for a new cluster', () => {
  it('is on by default for both listeners, with client-certificate authentication and the cluster CA as the only trusted one', () => {
    const { args } = member(synth({ size: 3 }));
    expect(args).toEqual(expect.arrayContaining([
      '--listen-peer-urls=https://0.0.0.0:2380',
      '--listen-client-urls=https://0.0.0.0:2379',
      '--advertise-client-urls=https://$(POD_NAME).orders-peers.$(POD_NAMESPACE).svc.cluster.local:2379',
      '--initial-advertise-peer-urls=https://$(POD_NAME).orders-peers:2380',
      '--cert-file=/etc/dkv/tls/member/tls.crt', '--key-file=/etc/dkv/tls/member/tls.key',
      '--client-cert-auth', '--trusted-ca-file=/etc/dkv/tls/member/ca.crt',
      '--peer-cert-file=/etc/dkv/tls/member/tls.crt', '--peer-key-file=/etc/dkv/tls/member/tls.key',
      '--peer-client-cert-auth', '--peer-trusted-ca-file=/etc/dkv/tls/member/ca.crt',
    ]));
    expect(byRole(synth({ size: 3 })).memberConfig!.data.ETCD_INITIAL_CLUSTER.split(',').every((m: string) => m.includes('=https://'))).toBe(true);
  });

  it('keeps the metrics listener on plain HTTP, and the probes on it, so probing and scraping need no certificate', () => {
    const container = member(synth({}));
    expect(container.args).toContain('--listen-metrics-urls=http://0.0.0.0:2381');
    for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
      expect(probe.httpGet).toEqual(expect.objectContaining({ port: 'metrics', scheme: 'HTTP' }));
    }
  });

  it('mounts the member Secret named by the configuration read-only, and nothing else but the data volume', () => {
    const objects = synth({});
    expect(podSpec(objects).volumes).toEqual([{ name: 'member-tls', secret: { secretName: 'orders-tls-member', defaultMode: 0o440 } }]);
    expect(member(objects).volumeMounts).toEqual([
      { name: 'data', mountPath: DEFAULT_CONFIG.dataPath },
      { name: 'member-tls', mountPath: '/etc/dkv/tls/member', readOnly: true },
    ]);
    const renamed = { ...DEFAULT_CONFIG, tls: { ...DEFAULT_CONFIG.tls, memberSecret: 'certs-{name}' } };
    expect(podSpec(synth({}, renamed)).volumes[0].secret.secretName).toBe('certs-orders');
  });

  it('gives the backup runner the client Secret, read-only, readable by its group, and DKV_TLS_DIR naming it', () => {
    const pod = byRole(synth({ backup: BACKUP })).cronJob!.spec.jobTemplate.spec.template.spec;
    expect(pod.volumes).toEqual([{ name: 'client-tls', secret: { secretName: 'orders-tls-client', defaultMode: 0o440 } }]);
    expect(pod.containers[0].volumeMounts).toEqual([{ name: 'client-tls', mountPath: '/etc/dkv/tls/client', readOnly: true }]);
    expect(pod.containers[0].env).toContainEqual({ name: 'DKV_TLS_DIR', value: '/etc/dkv/tls/client' });
    expect(pod.securityContext.fsGroup).toBe(65532);
  });

  it('configures peer and client TLS apart: either listener may stay plain while the other has TLS', () => {
    const peerOnly = member(synth({ tls: { client: { enabled: false } } })).args;
    expect(peerOnly).toEqual(expect.arrayContaining(['--listen-client-urls=http://0.0.0.0:2379', '--listen-peer-urls=https://0.0.0.0:2380', '--peer-client-cert-auth']));
    expect(flag(peerOnly, 'client-cert-auth')).toBeUndefined();
    expect(flag(peerOnly, 'cert-file')).toBeUndefined();
    expect(byRole(synth({ backup: BACKUP, tls: { client: { enabled: false } } })).cronJob!.spec.jobTemplate.spec.template.spec.volumes).toBeUndefined();
    const clientOnly = member(synth({ tls: { peer: { enabled: false } } })).args;
    expect(clientOnly).toEqual(expect.arrayContaining(['--listen-client-urls=https://0.0.0.0:2379', '--listen-peer-urls=http://0.0.0.0:2380', '--client-cert-auth']));
    expect(flag(clientOnly, 'peer-client-cert-auth')).toBeUndefined();
  });

  it('runs plain HTTP with no certificate anywhere when the spec says mode disabled', () => {
    const objects = synth({ backup: BACKUP, tls: { mode: 'disabled' } });
    expect(member(objects).args.filter((a: string) => a.includes('https') || a.includes('cert') || a.includes('trusted-ca'))).toEqual([]);
    expect(podSpec(objects).volumes).toBeUndefined();
    expect(byRole(objects).cronJob!.spec.jobTemplate.spec.template.spec.volumes).toBeUndefined();
  });
});

describe('TLS for a running cluster', () => {
  it('keeps a cluster whose members run plain HTTP on plain HTTP, whatever the spec asks, and says why', () => {
    const plain = { peer: false, client: false };
    expect(tlsInEffect({}, plain)).toMatchObject({ mode: 'disabled', peer: false, client: false, reason: expect.stringContaining('migration') });
    expect(tlsInEffect({ tls: { mode: 'operator' } }, plain)).toMatchObject({ peer: false, client: false });
    const document = validateDistributedKV(kvDocument({}), DEFAULT_CONFIG);
    if (!document.valid) throw new Error('invalid fixture');
    const rendered = synthesizeCluster(document.resource, DEFAULT_CONFIG, undefined, { liveTls: plain }) as Manifest[];
    expect(member(rendered).args).toContain('--listen-peer-urls=http://0.0.0.0:2380');
    expect(podSpec(rendered).volumes).toBeUndefined();
  });

  it('reads the schemes the members run from their live StatefulSet, as the generator wrote it before TLS and since', () => {
    expect(liveTlsOf(byRole(synth({ tls: { mode: 'disabled' } })).statefulSet)).toEqual({ peer: false, client: false });
    expect(liveTlsOf(byRole(synth({})).statefulSet)).toEqual({ peer: true, client: true });
    expect(liveTlsOf(byRole(synth({ tls: { peer: { enabled: false } } })).statefulSet)).toEqual({ peer: false, client: true });
    expect(liveTlsOf(undefined)).toBeUndefined();
  });

  it('keeps TLS on a cluster that runs it, even when the spec turns it off (that too is a migration)', () => {
    expect(tlsInEffect({ tls: { mode: 'disabled' } }, { peer: true, client: true })).toMatchObject({ mode: 'operator', peer: true, client: true, reason: expect.any(String) });
  });

  it('follows the spec, with no reason, when the members run what it asks', () => {
    expect(tlsInEffect({}, { peer: true, client: true })).toEqual({ mode: 'operator', peer: true, client: true });
    expect(tlsInEffect({ tls: { mode: 'disabled' } }, { peer: false, client: false })).toEqual({ mode: 'disabled', peer: false, client: false });
  });
});

describe('spec.tls refused', () => {
  it('refuses cert-manager while the configuration names no issuer, naming the field (the rest: cert-manager.test.ts)', () => {
    const result = validateDistributedKV(kvDocument({ tls: { mode: 'cert-manager' } }), DEFAULT_CONFIG);
    expect(result.valid).toBe(false);
    expect(!result.valid && result.problems.map((p) => p.segments.join('.'))).toEqual(['spec.tls.mode']);
  });

  it('refuses a mode the schema does not know, naming the field', () => {
    const result = validateDistributedKV(kvDocument({ tls: { mode: 'mutual' } }), DEFAULT_CONFIG);
    expect(!result.valid && result.problems.map((p) => p.segments.join('.'))).toEqual(['spec.tls.mode']);
  });
});
