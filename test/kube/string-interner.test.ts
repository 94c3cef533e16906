/**
 * The interner changes no value, only how many copies of it the heap holds;
 * its table stays bounded. (The memory it saves is a benchmark figure:
 * bench/controller prints the settled heap.)
 */
import { StringInterner } from '../../kube/string-interner.js';

describe('StringInterner', () => {
  it('leaves every value of a parsed tree as it was, arrays and nesting included', () => {
    const text = JSON.stringify({
      metadata: { name: 'kv', labels: { 'app.kubernetes.io/name': 'distributedkv' }, ownerReferences: [{ uid: 'c0ffee00-0000-4000-8000-000000000001', controller: true }] },
      spec: { replicas: 3, template: { spec: { containers: [{ name: 'kv', args: ['--a', '--b', null], ports: [{ containerPort: 2379 }] }] } } },
    });
    const interner = new StringInterner();
    const first = interner.internTree(JSON.parse(text));
    const second = interner.internTree(JSON.parse(text));
    expect(first).toEqual(JSON.parse(text));
    expect(second).toEqual(first);
    // 'kv' (twice in the tree), 'distributedkv', the uid, '--a', '--b': each value kept once, however often parsed.
    expect(interner.size).toBe(5);
  });

  it('passes long strings through without keeping them', () => {
    const interner = new StringInterner(10, 8);
    expect(interner.intern('x'.repeat(9))).toBe('x'.repeat(9));
    expect(interner.size).toBe(0);
    expect(interner.intern('x'.repeat(8))).toBe('x'.repeat(8));
    expect(interner.size).toBe(1);
  });

  it('starts over when its table is full, so strings that stopped occurring are not kept', () => {
    const interner = new StringInterner(3);
    for (let i = 0; i < 10; i++) {
      expect(interner.intern(`rv-${i}`)).toBe(`rv-${i}`);
      expect(interner.size).toBeLessThanOrEqual(3);
    }
    expect(interner.size).toBe(1); // cleared at the 4th, 7th and 10th new string
  });
});
