/**
 * jest global setup: one control plane for the whole run. Its kubeconfig
 * path reaches the tests through DKV_TEST_KUBECONFIG. Without a Go toolchain
 * or envtest binaries the integration tests are skipped with a loud message,
 * except under CI=true, where that is a failure.
 */
import { ControlPlaneUnavailable, startControlPlane, type ControlPlane } from './control-plane.js';

declare global {
  var __DKV_CONTROL_PLANE__: ControlPlane | undefined;
}

export default async function globalSetup(): Promise<void> {
  if (process.env.DKV_SKIP_CLUSTER === '1' && process.env.CI !== 'true') {
    process.stderr.write('\n*** DKV_SKIP_CLUSTER=1: integration tests against kube-apiserver are SKIPPED ***\n\n');
    return;
  }
  try {
    const plane = await startControlPlane();
    globalThis.__DKV_CONTROL_PLANE__ = plane;
    process.env.DKV_TEST_KUBECONFIG = plane.kubeconfigPath;
    process.stderr.write(`\ncontrol plane (etcd + kube-apiserver) ready in ${plane.startMillis} ms at ${plane.server}\n`);
  } catch (e) {
    if (e instanceof ControlPlaneUnavailable && process.env.CI !== 'true') {
      process.stderr.write(`\n${'*'.repeat(78)}\n*** ${e.message}\n*** integration tests against a real kube-apiserver are SKIPPED\n${'*'.repeat(78)}\n\n`);
      return;
    }
    throw e;
  }
}
