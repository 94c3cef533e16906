/**
 * Refuses an image change the running members cannot take one at a time
 * (for etcd: skipping a minor version, or going below the cluster version),
 * before anything is written: a rolling restart onto such an image would
 * stop at the first member, which could not rejoin. Costs no request unless
 * the spec's image differs from the live pod template's; then the members'
 * images are read (fresh) through the reader the core hands in.
 */
import type { Engine } from '../../engines/index.js';
import type { CachedObject } from '../../kube/informer.js';
import { PROCEED, type CheckDecision } from '../core/step-decision.js';
import { templateImage } from './membership-step.js';

export interface ImageChangeInput {
  /** The engine's rule, when it has one (etcd's version skew). */
  readonly problem: Engine['imageChangeProblem'];
  /** The live StatefulSet, when it is this cluster's (controlled by it). */
  readonly statefulSet?: CachedObject;
  /** `spec.image`. */
  readonly image: string;
  /** The images the member pods run now, read when the image changes. */
  readonly memberImages: () => Promise<readonly string[]>;
}

/** Refuses when `spec.image` cannot replace what the members run. */
export async function imageChangeDecision(input: ImageChangeInput): Promise<CheckDecision> {
  if (!input.problem || !input.statefulSet) return PROCEED;
  const liveImage = templateImage(input.statefulSet);
  if (liveImage === undefined || liveImage === input.image) return PROCEED;
  const found = input.problem(input.image, [liveImage, ...await input.memberImages()]);
  return found ? { kind: 'refuse', reason: 'ImageChangeRefused', message: `spec.image: ${found}`, retry: 'onChange' } : PROCEED;
}
