/**
 * One copy of each repeated string in cached objects. JSON.parse gives every
 * value its own string, so the cache of a large fleet holds thousands of
 * copies of the same label values, image names, owner uids and timestamps
 * (a heap snapshot at 2,000 clusters: 9 of 14 MB of object strings were
 * copies). The table is bounded: when full it starts over, so strings that
 * stopped occurring (old resourceVersions, deleted objects' uids) are not
 * kept; strings already shared stay shared.
 */
export class StringInterner {
  private table = new Map<string, string>();

  /**
   * @param limit entries before the table starts over
   * @param maxLength longer strings (a last-applied copy, a certificate) are left alone
   */
  constructor(private readonly limit = 100_000, private readonly maxLength = 512) {}

  intern(value: string): string {
    if (value.length > this.maxLength) return value;
    const known = this.table.get(value);
    if (known !== undefined) return known;
    if (this.table.size >= this.limit) this.table.clear();
    this.table.set(value, value);
    return value;
  }

  /** Replaces, in place, every string value in a parsed JSON tree with its shared copy. */
  internTree<T>(tree: T): T {
    if (Array.isArray(tree)) {
      for (let i = 0; i < tree.length; i++) {
        const value = tree[i];
        if (typeof value === 'string') tree[i] = this.intern(value);
        else if (value !== null && typeof value === 'object') this.internTree(value);
      }
    } else if (tree !== null && typeof tree === 'object') {
      const node = tree as Record<string, unknown>;
      for (const key of Object.keys(node)) {
        const value = node[key];
        if (typeof value === 'string') node[key] = this.intern(value);
        else if (value !== null && typeof value === 'object') this.internTree(value);
      }
    }
    return tree;
  }

  get size(): number {
    return this.table.size;
  }
}
