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
    expect(recover.volumeMounts).toEqual(member.volumeMounts);
    expect(recover.securityContext).toEqual(member.securityContext);
    expect(recover.resources).toMatchObject({ limits: expect.any(Object) });
  });
});
