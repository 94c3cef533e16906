/**
 * `npm run cluster`: a control plane for humans. Prints the kubeconfig path
 * and runs until interrupted, then tears everything down.
 */
import { startControlPlane } from './control-plane.js';

const plane = await startControlPlane();
process.stdout.write(`control plane ready in ${plane.startMillis} ms at ${plane.server}\nexport KUBECONFIG=${plane.kubeconfigPath}\n(Ctrl-C stops it)\n`);
const shutdown = async (): Promise<void> => {
  await plane.stop();
  process.exit(0);
};
process.removeAllListeners('SIGINT');
process.removeAllListeners('SIGTERM');
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
setInterval(() => undefined, 1 << 30);
