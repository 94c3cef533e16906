/**
 * Every etcd member pod runs the `recover` init container
 * (engines/etcd/rebuild-container.ts): a lost quorum's recovery may choose
 * any member, long after the pod template was written. It acts only when the
 * recovery ConfigMap names its pod, which it reads optionally: outside a
 * recovery there is none, and the pod starts as before.
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
    // The member's data only: the rebuild runs offline (etcdutl), so it mounts none of the member's TLS keys.
    expect(recover.volumeMounts).toEqual(member.volumeMounts.filter((m: any) => m.name === 'data'));
    expect(member.volumeMounts.map((m: any) => m.name)).toEqual(['data', 'member-tls']);
    expect(recover.securityContext).toEqual(member.securityContext);
    expect(recover.resources).toMatchObject({ limits: expect.any(Object) });
  });

  it('writes the peer URL with the scheme the member runs: https with peer TLS, http without', () => {
    for (const [tls, scheme] of [[undefined, 'https'], [{ peer: { enabled: false } }, 'http'], [{ mode: 'disabled' }, 'http']] as const) {
      const pod = (byRole(synth({ name: 'orders', image: ETCD, ...(tls ? { tls } : {}) })).statefulSet as any).spec.template.spec;
      const recover = pod.initContainers.find((c: any) => c.name === 'recover');
      expect(flag(recover.args, 'initial-advertise-peer-urls')).toBe(`${scheme}://$(POD_NAME).orders-peers:2380`);
    }
  });
});
