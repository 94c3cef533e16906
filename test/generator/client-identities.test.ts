/**
 * spec.clients as `dkv validate`, `dkv synth` and the controller read it
 * (docs/client-identities.md): every problem named by its field, and a spec
 * with one refused whole, before anything is issued or granted.
 */
import { validateDistributedKV } from '../../api/validate.js';
import { BACKUP, byRole, DEFAULT_CONFIG, kvDocument, synth, type ClusterOptions } from './support.js';

const ETCD = 'registry.k8s.io/etcd:3.6.8-0';
const problems = (options: ClusterOptions) => {
  const result = validateDistributedKV(kvDocument({ image: ETCD, ...options }), DEFAULT_CONFIG);
  return result.valid ? [] : result.problems.map((p) => `${p.segments.join('.')}: ${p.message}`);
};

describe('client identities in the spec', () => {
  it('accepts named clients with disjoint read-write prefixes, read-only clients reading inside another\'s, and an empty list (root only)', () => {
    expect(problems({ clients: [
      { name: 'orders', prefix: '/orders/', access: 'readWrite' },
      { name: 'billing', prefix: '/billing/' },
      { name: 'audit', prefix: '/audit/', access: 'read' },
      { name: 'audit-2', prefix: '/audit/2026/', access: 'read' },
    ] })).toEqual([]);
    expect(problems({ clients: [] })).toEqual([]);
  });

  it('refuses a name that is not a DNS label (an etcd user name, a certificate\'s common name, part of a Secret\'s name)', () => {
    expect(problems({ clients: [{ name: 'Orders_App', prefix: '/o/' }] })).toEqual(['spec.clients.0.name: must match ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ (got "Orders_App")']);
    expect(problems({ clients: [{ name: 'a'.repeat(64), prefix: '/o/' }] })).toEqual([expect.stringMatching(/^spec\.clients\.0\.name: .*63/)]);
  });

  it('refuses root, the controller\'s own etcd user', () => {
    expect(problems({ clients: [{ name: 'root', prefix: '/' }] })).toEqual([expect.stringMatching(/^spec\.clients\.0\.name: root is etcd's administrator/)]);
  });

  it('refuses a duplicate name, naming both entries', () => {
    expect(problems({ clients: [{ name: 'orders', prefix: '/a/' }, { name: 'orders', prefix: '/b/', access: 'read' }] }))
      .toEqual(['spec.clients.1.name: duplicate client name "orders" (also spec.clients[0].name)']);
  });

  it('refuses a read-write prefix that overlaps another client\'s read-write prefix, whichever contains the other', () => {
    expect(problems({ clients: [{ name: 'orders', prefix: '/orders/' }, { name: 'all', prefix: '/' }] }))
      .toEqual([expect.stringMatching(/^spec\.clients\.1\.prefix: "\/" overlaps "\/orders\/", the readWrite prefix of client "orders" \(spec\.clients\[0\]\)/)]);
    expect(problems({ clients: [{ name: 'archive', prefix: '/orders/2026/', access: 'readWrite' }, { name: 'orders', prefix: '/orders/' }] }))
      .toEqual([expect.stringMatching(/^spec\.clients\.1\.prefix: "\/orders\/" overlaps "\/orders\/2026\/", the readWrite prefix of client "archive"/)]);
  });

  it('lets a read client overlap anything: one service writes /orders/, others (reports, an auditor) read it', () => {
    expect(problems({ clients: [{ name: 'reader', prefix: '/orders/2026/', access: 'read' }, { name: 'orders', prefix: '/orders/' }] })).toEqual([]);
    expect(problems({ clients: [{ name: 'orders', prefix: '/orders/' }, { name: 'auditor', prefix: '/', access: 'read' }, { name: 'cache', prefix: '/orders/', access: 'read' }] })).toEqual([]);
    // Siblings that share only a leading string that is not a prefix of the other do not overlap.
    expect(problems({ clients: [{ name: 'a', prefix: '/orders/' }, { name: 'b', prefix: '/orders-archive/' }] })).toEqual([]);
  });

  it('reserves dkv-operator, the common name of the controller\'s own client certificate, as it reserves root', () => {
    expect(problems({ clients: [{ name: 'dkv-operator', prefix: '/d/' }] })).toEqual(['spec.clients.0.name: dkv-operator is the common name of the controller\'s own client certificate: choose another name']);
  });

  it('refuses client identities on etcd 3.5, whose NOSPACE alarm lifts the authentication check (etcd-io/etcd#22386), naming the image', () => {
    for (const image of ['registry.k8s.io/etcd:3.5.21-0', 'quay.io/coreos/etcd:v3.5.17']) {
      expect(problems({ image, clients: [{ name: 'orders', prefix: '/o/' }] })).toEqual([expect.stringMatching(/^spec\.clients: not with etcd 3\.5\.\d+ \(spec\.image\): on etcd 3\.5 a NOSPACE alarm .*22386/)]);
      // An empty list turns authentication on too (the root user): the same hole.
      expect(problems({ image, clients: [] })).toHaveLength(1);
    }
    expect(problems({ image: 'registry.k8s.io/etcd:3.6.0-0', clients: [{ name: 'orders', prefix: '/o/' }] })).toEqual([]);
    // An image whose tag names no etcd version (a team's own build): nothing to judge.
    expect(problems({ image: 'registry.example.com/kv/server:2.0.0', clients: [{ name: 'orders', prefix: '/o/' }] })).toEqual([]);
  });

  it('refuses client identities on members that do not authenticate clients by certificate', () => {
    expect(problems({ tls: { mode: 'disabled' }, clients: [{ name: 'orders', prefix: '/o/' }] })).toEqual([expect.stringMatching(/^spec\.clients: needs client TLS/)]);
    expect(problems({ tls: { client: { enabled: false } }, clients: [{ name: 'orders', prefix: '/o/' }] })).toEqual([expect.stringMatching(/^spec\.clients: needs client TLS/)]);
  });

  it('refuses client identities with an engine other than etcd (they are etcd users and roles)', () => {
    const generic = validateDistributedKV(kvDocument({ tls: { mode: 'disabled' }, clients: [] }), { ...DEFAULT_CONFIG, engine: 'generic' });
    expect(generic.valid ? [] : generic.problems.map((p) => `${p.segments.join('.')}: ${p.message}`))
      .toEqual(['spec.clients: the generic engine has no client identities: they are etcd users and roles; leave spec.clients out']);
  });

    it('reports every problem at once', () => {
    expect(problems({ clients: [{ name: 'root', prefix: '/r/' }, { name: 'x', prefix: '/x/' }, { name: 'x', prefix: '/x/y/' }, { name: 'y', prefix: '/y/', access: 'write' }] })).toEqual([
      'spec.clients.3.access: must be one of "read", "readWrite" (got "write")',
      expect.stringMatching(/^spec\.clients\.0\.name: root is/),
      expect.stringMatching(/^spec\.clients\.2\.name: duplicate/),
      expect.stringMatching(/^spec\.clients\.2\.prefix: "\/x\/y\/" overlaps "\/x\/"/),
    ]);
  });
});

describe('the backup runner of a cluster with client identities', () => {
  const runner = (options: ClusterOptions) => byRole(synth({ backup: BACKUP, ...options })).cronJob!.spec.jobTemplate.spec.template.spec;

  it('mounts the root identity\'s Secret where DKV_TLS_DIR says: etcd serves a snapshot to the root role only once authentication is on', () => {
    const pod = runner({ clients: [{ name: 'app', prefix: '/app/' }] });
    expect(pod.volumes).toEqual([{ name: 'client-tls', secret: { secretName: 'orders-etcd-root', defaultMode: 0o440 } }]);
    expect(pod.containers[0].env).toContainEqual({ name: 'DKV_TLS_DIR', value: '/etc/dkv/tls/client' });
    // An empty list is root only, authentication on all the same.
    expect(runner({ clients: [] }).volumes[0].secret.secretName).toBe('orders-etcd-root');
  });

  it('keeps the client Secret without spec.clients (authentication off)', () => {
    expect(runner({}).volumes[0].secret.secretName).toBe('orders-tls-client');
  });
});
