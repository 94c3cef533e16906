/**
 * The integration lane's order: the files that need only the control plane
 * first, then by the last component each needs, in the order
 * test/cluster/build-all.sh builds them (COMPONENT_ORDER), so that on a cold
 * cache the tests run while the later components are still building. Within
 * one rank jest's own order stands (failed last time first, then slowest).
 * Loaded by jest outside its transformer, from lib/ (compiled by pretest).
 */
import Sequencer from '@jest/test-sequencer';
import type { Test } from '@jest/test-result';
import { ComponentNeeds } from './component-needs.js';

export default class ComponentOrderSequencer extends Sequencer.default {
  override async sort(tests: Array<Test>): Promise<Array<Test>> {
    const jestOrder = await super.sort(tests);
    const needs = new ComponentNeeds();
    const rank = new Map(jestOrder.map((t) => [t.path, needs.rank(t.path)]));
    return [...jestOrder].sort((a, b) => rank.get(a.path)! - rank.get(b.path)!);
  }
}
