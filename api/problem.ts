/**
 * One thing wrong with the user's input. Problems are collected, never thrown,
 * so that one run reports every problem in every file.
 */
export interface Problem {
  /** The file the problem is in, as the user named it. */
  readonly file: string;
  /** Dotted field path (`spec.backup.s3Path`), or empty for a whole-file problem. */
  readonly path: string;
  readonly message: string;
  /** 1-based line in the file, where known. */
  readonly line?: number;
  /** 1-based column in the file, where known (broken YAML). */
  readonly column?: number;
}

/** `file: field.path: message (line N)`; broken YAML reads `file:line:column: message`. */
export function formatProblem(problem: Problem): string {
  if (!problem.path && problem.line !== undefined) {
    return `${problem.file}:${problem.line}:${problem.column ?? 1}: ${problem.message}`;
  }
  const where = problem.path ? `${problem.file}: ${problem.path}` : problem.file;
  const line = problem.line !== undefined ? ` (line ${problem.line})` : '';
  return `${where}: ${problem.message}${line}`;
}

/** Thrown when input has problems; carries all of them. Its message is the formatted list. */
export class InputError extends Error {
  constructor(readonly problems: readonly Problem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'InputError';
  }
}

/** A YAML parser error (from the `yaml` package, parsed with prettyErrors) as a Problem at its line and column. */
export function yamlProblem(file: string, error: { message: string; linePos?: [{ line: number; col: number }, ...unknown[]] }): Problem {
  const pos = error.linePos?.[0];
  const message = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
  return { file, path: '', message: `invalid YAML: ${message}`, line: pos?.line ?? 1, column: pos?.col ?? 1 };
}

/**
 * A parsed YAML document's value, or the problem that stops it from having
 * one. Parsing lets some broken input through that only turning the document
 * into a value finds: an alias bomb ("billion laughs", a few lines whose
 * aliases expand to gigabytes, refused after `maxAliasCount` expansions). That
 * is a broken file like any other, not an internal error.
 */
export function yamlValue(file: string, doc: { toJS(options?: { maxAliasCount?: number }): unknown }, maxAliasCount = 100): { value: unknown } | { problem: Problem } {
  try {
    return { value: doc.toJS({ maxAliasCount }) };
  } catch (e) {
    return { problem: { file, path: '', message: `invalid YAML: ${e instanceof Error ? e.message : String(e)}` } };
  }
}

/** Thrown when the configuration cannot render a spec (a patch that does not apply to it); names the configuration's fields. */
export class InvalidConfigError extends Error {
  constructor(readonly problems: readonly Problem[]) {
    super(problems.map(formatProblem).join('\n'));
    this.name = 'InvalidConfigError';
  }
}
