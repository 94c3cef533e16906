import type { EngineName } from '../model/generator-config.js';
import type { Engine } from './engine.js';
import { etcdEngine } from './etcd/member-container.js';
import { genericEngine } from './generic/member-container.js';

export type { Engine, MemberContainer, MemberContainerProps, MembershipPlan } from './engine.js';

const ENGINES: Readonly<Record<EngineName, Engine>> = { etcd: etcdEngine, generic: genericEngine };

/** The engine a configuration names (the schema admits only these). */
export function engineFor(name: EngineName): Engine {
  return ENGINES[name];
}
