/**
 * The known field a mistyped one most likely meant, for "unknown field"
 * messages: `spec.sise: unknown field; did you mean spec.size?`. A user who
 * sees the right name fixes a typo at once; one who sees only "unknown
 * field" goes to the reference to find it.
 */

/** A known name, and other names a user may know it by (Kubernetes calls a StatefulSet's `size` `replicas`). */
export interface KnownName {
  readonly name: string;
  readonly synonyms?: readonly string[];
}

/**
 * Edit distance with adjacent transpositions (optimal string alignment, the
 * usual "Damerau-Levenshtein" of spelling checkers): `sise`, `szie` and
 * `siz` are each one edit from `size`.
 */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/**
 * How many edits still read as a typo of `name`: two, but one for names of
 * four letters or fewer, where two edits reach unrelated words (`kind` is
 * two edits from `mind` and from `king`).
 */
function tolerance(name: string): number {
  return name.length <= 4 ? 1 : 2;
}

/**
 * The known name nearest to `unknown` (case aside: `s3path` means `s3Path`),
 * by its own spelling or a synonym's; undefined when none is close enough to
 * be a typo, so that no message suggests a field the user plainly did not
 * mean. Ties go to the first known name, in schema order.
 */
export function nearestName(unknown: string, known: readonly KnownName[]): string | undefined {
  const typed = unknown.toLowerCase();
  let best: { name: string; distance: number } | undefined;
  for (const { name, synonyms = [] } of known) {
    for (const spelling of [name, ...synonyms]) {
      const distance = editDistance(typed, spelling.toLowerCase());
      if (distance > tolerance(spelling) || (best && best.distance <= distance)) continue;
      best = { name, distance };
    }
  }
  return best?.name;
}
