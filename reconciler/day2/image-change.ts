/**
 * Refuses an image change the running members cannot take one at a time
 * (for etcd: skipping a minor version, or going below the cluster version),
 * before anything is written: a rolling restart onto such an image would
 * stop at the first member, which could not rejoin. Costs no request unless
 * the spec's image differs from the live pod template's.
 */
import type { ValidResource } from '../../api/validate.js';
import { engineFor } from '../../engines/index.js';
import type { CachedObject } from '../../kube/informer.js';
import { clusterIdentity } from '../../model/cluster-identity.js';
import { memberPods, templateImage } from './membership-step.js';
import { controllingOwner } from '../core/ownership.js';
import type { ReconcileContext } from '../core/reconcile-context.js';

/** Why `spec.image` cannot replace what the members run, if it cannot. */
export async function imageChangeRefusal(ctx: ReconcileContext, cr: CachedObject, resource: ValidResource): Promise<string | undefined> {
  const problem = engineFor(ctx.config.engine).imageChangeProblem;
  if (!problem) return undefined;
  const namespace = cr.metadata.namespace!;
  const identity = clusterIdentity(resource.metadata.name, ctx.config);
  const statefulSet = ctx.owned.get('apps/v1/StatefulSet')?.get(`${namespace}/${identity.statefulSetName}`);
  if (!statefulSet || controllingOwner(statefulSet)?.uid !== cr.metadata.uid) return undefined;
  const liveImage = templateImage(statefulSet);
  if (liveImage === undefined || liveImage === resource.spec.image) return undefined;
  const running = [liveImage, ...(await memberPods(ctx, namespace, identity)).map((p) => p.image)];
  const found = problem(resource.spec.image, running);
  return found && `spec.image: ${found}`;
}
