/**
 * When the healing reader reads a member container's previous log (a real
 * kubelet's termination message is the log's tail, and etcd's stack trace
 * pushes its data-loss panic line out of it), and that it reads each exited
 * container once. The API server's answers here are the shapes it gives
 * (pods list, pods/log as text/plain); what they mean is the replacement
 * signal's (test/engines/replacement.test.ts).
 */
import type { KubeClient } from '../../kube/client.js';
import { ExitedLogMemory, healingReader } from '../../reconciler/day2/member-replacement.js';
import type { ClusterIdentity } from '../../model/cluster-identity.js';

const NOW = Date.parse('2026-11-28T21:00:00Z');
const identity = { selector: { app: 'kv' }, statefulSetName: 'kv' } as unknown as ClusterIdentity;
const PANIC = '{"level":"panic","msg":"tocommit(1042) is out of range [lastIndex(0)]. Was the raft log corrupted, truncated, or lost?"}';
const STACK = 'goroutine 155 [running]:\ngo.etcd.io/raft/v3.(*raft).Step(...)\n\tgo.etcd.io/raft/v3@v3.6.0/raft.go:1257 +0x1ba';

function pod(name: string, container: Record<string, unknown>) {
  return { metadata: { name, uid: `uid-${name}`, creationTimestamp: '2026-11-28T20:00:00Z' }, status: { containerStatuses: [{ name: 'kv', ...container }] } };
}

const exited = (containerID: string, finishedAt: string, message = STACK) => ({ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { containerID, finishedAt, message } } });

function recordingClient(pods: unknown[], log: string) {
  const logReads: { path: string; query: unknown }[] = [];
  const client = {
    async request(_method: string, path: string, options: { query?: unknown } = {}) {
      if (path.endsWith('/log')) {
        logReads.push({ path, query: options.query });
        return log;
      }
      return { items: pods };
    },
  } as unknown as KubeClient;
  return { client, logReads };
}

describe('the previous log of an exited member container', () => {
  it('is read for a container that exited recently, is not running, and whose message names no data loss; its data-loss lines reach the pod', async () => {
    const { client, logReads } = recordingClient([pod('kv-1', exited('containerd://a', '2026-11-28T20:59:30Z'))], `{"level":"info","msg":"starting"}\n${PANIC}\n${STACK}\n`);
    const pods = await healingReader(client, () => NOW, new ExitedLogMemory()).pods('shop', identity);
    expect(pods.get('kv-1')).toMatchObject({ lastTermination: STACK, lastLogTail: PANIC, running: false });
    expect(logReads).toEqual([{ path: '/api/v1/namespaces/shop/pods/kv-1/log', query: { container: 'kv', previous: 'true', tailLines: 300, limitBytes: 131072 } }]);
  });

  it('is not read for a running container, an old exit, or a message that names the loss already', async () => {
    const { client, logReads } = recordingClient([
      pod('kv-0', { state: { running: {} }, lastState: { terminated: { containerID: 'containerd://b', finishedAt: '2026-11-28T20:59:30Z', message: STACK } } }),
      pod('kv-1', exited('containerd://c', '2026-11-28T20:40:00Z')),
      pod('kv-2', exited('containerd://d', '2026-11-28T20:59:30Z', PANIC)),
    ], PANIC);
    const pods = await healingReader(client, () => NOW, new ExitedLogMemory()).pods('shop', identity);
    expect(logReads).toEqual([]);
    expect([...pods.values()].map((p) => p.lastLogTail)).toEqual([undefined, undefined, undefined]);
  });

  it('is read once per exited container however long its pod crash-loops, and again for the next exit', async () => {
    const memory = new ExitedLogMemory();
    const first = recordingClient([pod('kv-1', exited('containerd://e', '2026-11-28T20:59:30Z'))], 'nothing about data\n');
    await healingReader(first.client, () => NOW, memory).pods('shop', identity);
    await healingReader(first.client, () => NOW, memory).pods('shop', identity);
    expect(first.logReads).toHaveLength(1);
    const next = recordingClient([pod('kv-1', exited('containerd://f', '2026-11-28T20:59:50Z'))], PANIC);
    expect((await healingReader(next.client, () => NOW, memory).pods('shop', identity)).get('kv-1')?.lastLogTail).toBe(PANIC);
  });

  it('reads an exit\'s log once even when the read fails (refused, the kubelet unreachable): a crash loop costs one read per exit', async () => {
    let reads = 0;
    const client = {
      async request(_method: string, path: string) {
        if (!path.endsWith('/log')) return { items: [pod('kv-1', exited('containerd://g', '2026-11-28T20:59:30Z'))] };
        reads++;
        throw new Error('pods "kv-1" is forbidden: cannot get resource "pods/log"');
      },
    } as unknown as KubeClient;
    const memory = new ExitedLogMemory();
    for (let i = 0; i < 3; i++) expect((await healingReader(client, () => NOW, memory).pods('shop', identity)).get('kv-1')?.lastLogTail).toBe('');
    expect(reads).toBe(1);
  });

  it('keeps at most its limit of containers, the oldest going first', () => {
    const memory = new ExitedLogMemory(2);
    memory.remember('a', '');
    memory.remember('b', 'x');
    memory.remember('c', 'y');
    expect([memory.get('a'), memory.get('b'), memory.get('c')]).toEqual([undefined, 'x', 'y']);
  });

  it('takes a failed init container\'s exit when it is the latest, as a kubelet reports it', async () => {
    const REFUSAL = 'dkv rebuild-member: refused: member ab54a98ceb1f0ad2 has already been bootstrapped: kv-1 is a started member of its cluster';
    const initializing = {
      metadata: { name: 'kv-1', uid: 'uid-kv-1', creationTimestamp: '2026-11-28T20:59:00Z' },
      status: {
        // The member container never ran in this pod; an older exit of it in another pod is not here.
        containerStatuses: [{ name: 'kv', state: { waiting: { reason: 'PodInitializing' } } }],
        initContainerStatuses: [{ name: 'recover', state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://h', finishedAt: '2026-11-28T20:59:40Z', message: REFUSAL } } }],
      },
    };
    // Between its exit and its restart, the kubelet shows the exit as the init container's state.
    const justExited = {
      metadata: { name: 'kv-2', uid: 'uid-kv-2', creationTimestamp: '2026-11-28T20:59:00Z' },
      status: {
        containerStatuses: [{ name: 'kv', state: { waiting: { reason: 'PodInitializing' } }, lastState: { terminated: { containerID: 'containerd://i', finishedAt: '2026-11-28T20:10:00Z', message: STACK } } }],
        initContainerStatuses: [{ name: 'recover', state: { terminated: { exitCode: 1, containerID: 'containerd://j', finishedAt: '2026-11-28T20:59:45Z', message: REFUSAL } } }],
      },
    };
    const { client, logReads } = recordingClient([initializing, justExited], PANIC);
    const pods = await healingReader(client, () => NOW, new ExitedLogMemory()).pods('shop', identity);
    expect(pods.get('kv-1')).toMatchObject({ lastTermination: REFUSAL, lastTerminationAtMs: Date.parse('2026-11-28T20:59:40Z'), running: false });
    expect(pods.get('kv-2')).toMatchObject({ lastTermination: REFUSAL, lastTerminationAtMs: Date.parse('2026-11-28T20:59:45Z'), running: false });
    expect(logReads).toEqual([]); // the messages name the loss already
  });

  it('reads the previous log of the container that exited last, an init container included', async () => {
    const p = {
      metadata: { name: 'kv-1', uid: 'uid-kv-1', creationTimestamp: '2026-11-28T20:59:00Z' },
      status: {
        containerStatuses: [{ name: 'kv', state: { waiting: { reason: 'PodInitializing' } } }],
        initContainerStatuses: [{ name: 'recover', state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, containerID: 'containerd://k', finishedAt: '2026-11-28T20:59:40Z', message: 'cut short' } } }],
      },
    };
    const { client, logReads } = recordingClient([p], PANIC);
    await healingReader(client, () => NOW, new ExitedLogMemory()).pods('shop', identity);
    expect(logReads.map((r) => (r.query as { container: string }).container)).toEqual(['recover']);
  });
});
