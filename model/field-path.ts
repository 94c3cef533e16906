/**
 * Field paths as users read them (`spec.template.spec.containers[kv].image`)
 * and as RFC 6901 JSON pointers carry them (`/spec/template/...`). One
 * spelling for every problem, Event and status message.
 */

/** A key, an array index, or a list item matched by its `name`. */
export type PathSegment = string | number | { readonly name: string };

/** `['spec', 'resources', 'limits', 'cpu']` → `spec.resources.limits.cpu`; indices as `[i]`, named items as `[name]`. */
export function dottedPath(segments: readonly PathSegment[]): string {
  return segments.reduce<string>((path, s) => {
    if (typeof s === 'number') return `${path}[${s}]`;
    if (typeof s === 'object') return `${path}[${s.name}]`;
    return path ? `${path}.${s}` : s;
  }, '');
}

/** The unescaped reference tokens of an RFC 6901 pointer (`''` is the whole document). */
export function pointerTokens(pointer: string): string[] {
  if (!pointer) return [];
  return pointer.slice(1).split('/').map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'));
}
