/**
 * The foreign-name index's selectors: together with the owned caches'
 * selector they select every object exactly once, whatever its labels, so a
 * name in neither cache is a name no object has.
 * test/integration/controller-ownership.test.ts runs the index against the real API server.
 */
import { complementSelectors } from '../../reconciler/foreign-names.js';

/** What kube-apiserver's label selector does with `k=v` and `k!=v` terms (`k!=v` also selects objects without k). */
function selects(selector: string, labels: Record<string, string>): boolean {
  return selector.split(',').filter(Boolean).every((term) => {
    const negated = term.includes('!=');
    const [key, value] = term.split(negated ? '!=' : '=');
    return negated ? labels[key] !== value : labels[key] === value;
  });
}

describe('complementSelectors', () => {
  it('negates each term after the ones before it', () => {
    expect(complementSelectors('app.kubernetes.io/name=distributedkv,app.kubernetes.io/managed-by=dkv'))
      .toEqual(['app.kubernetes.io/name!=distributedkv', 'app.kubernetes.io/name=distributedkv,app.kubernetes.io/managed-by!=dkv']);
    expect(complementSelectors('')).toEqual([]);
  });

  it('with the selector, selects every label set exactly once (all 3^3 sets over three keys: absent, the value, another value)', () => {
    const selector = 'a=x,b=y,c=z';
    const complements = complementSelectors(selector);
    const choices = (key: string, value: string) => [{}, { [key]: value }, { [key]: 'other' }];
    let sets = 0;
    for (const a of choices('a', 'x')) for (const b of choices('b', 'y')) for (const c of choices('c', 'z')) {
      const labels = { ...a, ...b, ...c, unrelated: 'w' };
      const matching = [selector, ...complements].filter((s) => selects(s, labels));
      expect({ labels, matching: matching.length }).toEqual({ labels, matching: 1 });
      sets++;
    }
    expect(sets).toBe(27);
  });

  it('refuses a term it cannot negate into one selector', () => {
    expect(() => complementSelectors('a!=x')).toThrow('"a!=x" is not an equality term');
    expect(() => complementSelectors('a==x')).toThrow('"a==x" is not an equality term');
    expect(() => complementSelectors('a in (x)')).toThrow('is not an equality term');
  });
});
