import { dottedPath, pointerTokens } from '../../model/field-path.js';

describe('field paths', () => {
  it('spell keys with dots, indices and named list items in brackets', () => {
    expect(dottedPath(['spec', 'resources', 'limits', 'cpu'])).toBe('spec.resources.limits.cpu');
    expect(dottedPath(['spec', 'template', 'spec', 'containers', { name: 'kv' }, 'ports', 0, 'containerPort'])).toBe('spec.template.spec.containers[kv].ports[0].containerPort');
    expect(dottedPath([])).toBe('');
    expect(dottedPath([3, 'name'])).toBe('[3].name');
  });

  it('read RFC 6901 pointers, unescaping ~1 before ~0', () => {
    expect(pointerTokens('')).toEqual([]);
    expect(pointerTokens('/metadata/labels/app.kubernetes.io~1name')).toEqual(['metadata', 'labels', 'app.kubernetes.io/name']);
    // "~01" is a literal "~1", not "/": the order the RFC requires.
    expect(pointerTokens('/a~01b/~0')).toEqual(['a~1b', '~']);
    expect(pointerTokens('/')).toEqual(['']);
  });
});
