/**
 * `npm run cluster`: a control plane for humans. Prints the kubeconfig path
 * and how to run kubectl (the control plane's own release, built beside it)
 * against it, and runs until interrupted, then tears everything down.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildBinaries } from './binaries.js';
import { startControlPlane } from './control-plane.js';

// kubectl is built (the first time) while etcd and kube-apiserver start.
const [plane, kubectlDir] = await Promise.all([startControlPlane(), buildBinaries(['kubectl']).catch(() => undefined)]);
const kubectl = kubectlDir && existsSync(join(kubectlDir, 'kubectl')) ? join(kubectlDir, 'kubectl') : undefined;
process.stdout.write([
  `control plane ready in ${plane.startMillis} ms at ${plane.server}`,
  `export KUBECONFIG=${plane.kubeconfigPath}`,
  kubectl
    ? `kubectl of the same release: ${kubectl}\n  e.g. KUBECONFIG=${plane.kubeconfigPath} ${kubectl} get --raw /version`
    : 'no kubectl was built (external binaries without one): any kubectl works with the KUBECONFIG above',
  '(Ctrl-C stops it)',
  '',
].join('\n'));
const shutdown = async (): Promise<void> => {
  await plane.stop();
  process.exit(0);
};
process.removeAllListeners('SIGINT');
process.removeAllListeners('SIGTERM');
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
setInterval(() => undefined, 1 << 30);
