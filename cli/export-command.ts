/**
 * `dkv export`: every DistributedKV of a cluster (or one namespace) as one
 * file per cluster, the definitions a new cluster needs to be rebuilt from:
 * what an upgrade, or a migration, starts with. `dkv import` applies them back.
 */
import { mkdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { API_VERSION, KIND } from '../api/validate.js';
import { KubeClient, resourcePath } from '../kube/client.js';
import { exportFileName, exportText, type LiveDistributedKV } from '../api/exported-definition.js';
import { writeFileAtomically } from './write-output.js';

export const EXPORT_USAGE = `usage: dkv export --out <dir> [--namespace <ns>] [--kubeconfig <file>]
  --out <dir>               where to write one <namespace>.<name>.yaml per DistributedKV (created)
  --namespace <ns>          export only this namespace (default: every namespace)
  --kubeconfig <file>       the cluster to read (default: $KUBECONFIG, ~/.kube/config, or in-cluster)
Each file holds apiVersion, kind, metadata (name, namespace, labels, annotations) and spec, without
what the API server set, so kubectl apply -f, dkv synth --specs and dkv import take it as it is; the
status at export is a comment at the top. Files of clusters no longer there are not removed: export
into an empty directory.
Exit codes: 0 written, 2 usage error, or the cluster could not be read.`;

/** Lists page by page: a cluster with thousands of DistributedKVs is not one response. */
const PAGE_SIZE = 500;

export async function listDistributedKVs(client: KubeClient, namespace?: string): Promise<LiveDistributedKV[]> {
  const items: LiveDistributedKV[] = [];
  let continueToken: string | undefined;
  do {
    const page = await client.request<{ items: LiveDistributedKV[]; metadata?: { continue?: string } }>('GET', resourcePath(API_VERSION, KIND, namespace), {
      query: { limit: PAGE_SIZE, continue: continueToken },
    });
    items.push(...page.items);
    continueToken = page.metadata?.continue || undefined;
  } while (continueToken);
  return items;
}

export async function exportCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { out: { type: 'string' }, namespace: { type: 'string' }, kubeconfig: { type: 'string' }, help: { type: 'boolean' } },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(EXPORT_USAGE + '\n');
    return 0;
  }
  if (!values.out) {
    process.stderr.write(`dkv export: --out is required: the directory to write the definitions into\n${EXPORT_USAGE}\n`);
    return 2;
  }
  const client = KubeClient.fromKubeconfig(values.kubeconfig);
  try {
    const live = await listDistributedKVs(client, values.namespace);
    const origin = { server: client.server, exportedAt: new Date() };
    mkdirSync(values.out, { recursive: true });
    for (const object of live) writeFileAtomically(values.out, exportFileName(object), exportText(object, origin));
    process.stderr.write(`exported ${live.length} DistributedKV(s) from ${client.server} into ${values.out}\n`);
    return 0;
  } catch (e) {
    process.stderr.write(`dkv export: cannot read the DistributedKVs from ${client.server}: ${(e as Error).message}\n`);
    return 2;
  } finally {
    client.close();
  }
}
