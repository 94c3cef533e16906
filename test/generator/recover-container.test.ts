/**
 * Every etcd member pod runs the `recover` init container
 * (engines/etcd/rebuild-container.ts): a lost quorum's recovery may choose
 * any member, long after the pod template was written. It acts only when the
 * recovery ConfigMap names its pod, which it reads optionally: outside a
 * recovery there is none, and the pod starts as before. Then it checks that
 * a member whose data is gone does not start (engines/etcd/member-data-check.ts):
 * for that it reads the member ConfigMap as etcd does, and the member's
 * certificate where the peers speak TLS.
 */
import { byRole, DEFAULT_CONFIG, synth } from './support.js';

const ETCD = 'registry.k8s.io/etcd:3.6.8-0';
const flag = (args: readonly string[], name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

describe('the recover init container of every member', () => {
  it('runs dkv rebuild-member from the runner image with the member\'s own name, data directory, token and peer URL, and the recovery ConfigMap optional', () => {
    const pod = (byRole(synth({ name: 'orders', image: ETCD })).statefulSet as any).spec.template.spec;
    const [member] = pod.containers;
    const [recover] = pod.initContainers;
    expect(recover.name).toBe('recover');
    expect(recover.image).toBe(DEFAULT_CONFIG.backup.runner.image);
    expect(recover.command).toEqual(['dkv', 'rebuild-member']);
    for (const name of ['name', 'data-dir', 'initial-cluster-token', 'initial-advertise-peer-urls']) expect([name, flag(recover.args, name)]).toEqual([name, flag(member.args, name)]);
    expect(recover.envFrom).toEqual([{ configMapRef: { name: 'orders-recovery', optional: true } }]);
    // The member ConfigMap's keys as the member has them (the peers to ask), by name.
    expect(recover.env).toEqual(member.env);
    expect(member.env.map((e: any) => e.valueFrom?.configMapKeyRef?.key).filter(Boolean)).toEqual(['ETCD_INITIAL_CLUSTER', 'ETCD_INITIAL_CLUSTER_STATE']);
    // The member's data, and its certificate read-only: the peers' /members is asked over peer TLS.
    expect(recover.volumeMounts).toEqual(member.volumeMounts);
    expect(member.volumeMounts.map((m: any) => [m.name, m.readOnly])).toEqual([['data', undefined], ['member-tls', true]]);
    expect(flag(recover.args, 'peer-tls-dir')).toBe(`${flag(member.args, 'peer-cert-file')!.replace(/tls\.crt$/, '')}`);
    // Its refusal is its log's last line: the kubelet keeps it as the termination message replacement reads.
    expect(recover.terminationMessagePolicy).toBe('FallbackToLogsOnError');
    expect(recover.securityContext).toEqual(member.securityContext);
    expect(recover.resources).toMatchObject({ limits: expect.any(Object) });
  });

  it('writes the peer URL with the scheme the member runs: https with peer TLS, http without', () => {
    for (const [tls, scheme] of [[undefined, 'https'], [{ peer: { enabled: false } }, 'http'], [{ mode: 'disabled' }, 'http']] as const) {
      const pod = (byRole(synth({ name: 'orders', image: ETCD, ...(tls ? { tls } : {}) })).statefulSet as any).spec.template.spec;
      const recover = pod.initContainers.find((c: any) => c.name === 'recover');
      expect(flag(recover.args, 'initial-advertise-peer-urls')).toBe(`${scheme}://$(POD_NAME).orders-peers:2380`);
      // Plain peers: no certificate to present, none mounted.
      expect(flag(recover.args, 'peer-tls-dir') === undefined).toBe(scheme === 'http');
      expect(recover.volumeMounts.map((m: any) => m.name)).toEqual(scheme === 'https' ? ['data', 'member-tls'] : ['data']);
    }
  });
});
