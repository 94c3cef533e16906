/**
 * jest global setup: one control plane for the whole run. Its kubeconfig
 * path reaches the tests through DKV_TEST_KUBECONFIG. Without a Go toolchain
 * or envtest binaries the integration tests are skipped with a loud message,
 * except under CI=true, where that is a failure.
 *
 * Only the core (etcd, kube-apiserver, dkv-pki) stands between a cold cache
 * and the first test; the rest (the `withNodes` components, kubectl) is then
 * built in the background, where the test that needs it finds it built or
 * waits for it (binaries.ts).
 */
import { CORE_BINARIES, LATER_BINARIES, locateBinaries, startBackgroundBuild, type BackgroundBuild } from './binaries.js';
import { ControlPlaneUnavailable, startControlPlane, type ControlPlane } from './control-plane.js';

declare global {
  var __DKV_CONTROL_PLANE__: ControlPlane | undefined;
  var __DKV_BACKGROUND_BUILD__: BackgroundBuild | undefined;
}

export default async function globalSetup(): Promise<void> {
  if (process.env.DKV_SKIP_CLUSTER === '1' && process.env.CI !== 'true') {
    process.stderr.write('\n*** DKV_SKIP_CLUSTER=1: integration tests against kube-apiserver are SKIPPED ***\n\n');
    return;
  }
  try {
    const binDir = locateBinaries(CORE_BINARIES);
    globalThis.__DKV_BACKGROUND_BUILD__ = startBackgroundBuild(LATER_BINARIES);
    // DKV_CONTROL_PLANE_REBUILD=1 rebuilds once per run: the builds above have it; a test's own request must not rebuild again.
    delete process.env.DKV_CONTROL_PLANE_REBUILD;
    const plane = await startControlPlane(binDir);
    globalThis.__DKV_CONTROL_PLANE__ = plane;
    process.env.DKV_TEST_KUBECONFIG = plane.kubeconfigPath;
    process.stderr.write(`\ncontrol plane (etcd + kube-apiserver) ready in ${plane.startMillis} ms at ${plane.server}\n`);
  } catch (e) {
    if (e instanceof ControlPlaneUnavailable && process.env.CI !== 'true') {
      process.stderr.write(`\n${'*'.repeat(78)}\n*** ${e.message}\n*** integration tests against a real kube-apiserver are SKIPPED\n${'*'.repeat(78)}\n\n`);
      return;
    }
    await globalThis.__DKV_BACKGROUND_BUILD__?.stop(); // no teardown follows a failed setup
    throw e;
  }
}
