import { readFileSync } from 'node:fs';
import { isNode, LineCounter, parseAllDocuments, type Document } from 'yaml';
import type { GeneratorConfig } from '../api/config.js';
import { yamlProblem, yamlValue, type Problem } from '../api/problem.js';
import { dottedPath } from '../model/field-path.js';
import { KIND, validateDistributedKV, type ValidResource } from '../api/validate.js';
import { findNameClashes, type NameClash } from '../constructs/name-clashes.js';
import { findS3PathClashes, type S3PathClash } from '../constructs/s3-path-clashes.js';
import { overlapPhrase, s3PathOf } from '../model/backup-folder.js';
import { plainYamlDocuments } from './plain-yaml.js';
import { specFiles, type SpecInputs } from './spec-files.js';

export { specFiles, type SpecInputs };

/** A DistributedKV read from a file, with where it came from. */
export interface SpecDocument {
  readonly file: string;
  readonly resource: ValidResource;
  /** 1-based line of its metadata.name, for problems that concern the cluster as a whole. */
  readonly line?: number;
  /** 1-based line of its spec.backup.s3Path, when it has one. */
  readonly s3PathLine?: number;
}

export interface ReadResult {
  readonly specs: SpecDocument[];
  readonly problems: Problem[];
  /** Documents of other kinds, passed over (`file: Kind/name`). */
  readonly skipped: string[];
}

/** The line of the deepest node on `segments` that exists in the document (a missing field points at its parent). */
function lineOf(doc: Document, segments: readonly (string | number)[], lineCounter: LineCounter): number | undefined {
  for (let n = segments.length; n >= 0; n--) {
    const node = doc.getIn(segments.slice(0, n), true);
    if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
  }
  return undefined;
}

const S3_PATH = ['spec', 'backup', 's3Path'] as const;

/**
 * Reads and validates every DistributedKV document in one YAML text. Broken
 * YAML is reported by line and column; every invalid field by path and line.
 *
 * Most files are plain and valid: those are read the quick way
 * (plain-yaml.ts) and their specs learn their lines only when something asks
 * (a clash, a warning), from the thorough reading. A file the quick way
 * declines, or with any problem or other kind in it, is read the thorough
 * way from the start, so what is reported is exactly what it reports.
 */
export function readSpecText(file: string, text: string, config: GeneratorConfig): ReadResult {
  const values = plainYamlDocuments(text);
  if (values === undefined) return readSpecTextWithLines(file, text, config);
  const specs: SpecDocument[] = [];
  let thorough: ReadResult | undefined;
  const linesOf = (index: number): SpecDocument => {
    thorough ??= readSpecTextWithLines(file, text, config);
    const spec = thorough.specs[index];
    // Both readings produce the same values (plain-yaml.ts), hence the same specs in the same order.
    if (spec?.resource.metadata.name !== specs[index].resource.metadata.name) throw new Error(`${file}: the quick and the thorough reading disagree on document ${index + 1}`);
    return spec;
  };
  for (const value of values) {
    if (value === null || value === undefined) continue; // an empty document, e.g. a trailing `---`
    const kind = typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>).kind : undefined;
    if (typeof kind === 'string' && kind !== KIND) return readSpecTextWithLines(file, text, config); // skipped or a near-miss: said the thorough way
    const result = validateDistributedKV(value, config);
    if (!result.valid) return readSpecTextWithLines(file, text, config);
    specs.push(new LazyLineSpec(file, result.resource, specs.length, linesOf));
  }
  return { specs, problems: [], skipped: [] };
}

/** A spec read the quick way: its lines come from the thorough reading of its file, made the first time one is asked for. */
class LazyLineSpec implements SpecDocument {
  constructor(
    readonly file: string,
    readonly resource: ValidResource,
    private readonly index: number,
    private readonly thorough: (index: number) => SpecDocument,
  ) {}

  get line(): number | undefined {
    return this.thorough(this.index).line;
  }

  get s3PathLine(): number | undefined {
    return this.thorough(this.index).s3PathLine;
  }
}

/**
 * readSpecText the thorough way: `yaml`'s documents, with a line for every
 * node. Broken YAML is reported by line and column; every invalid field by
 * path and line.
 */
function readSpecTextWithLines(file: string, text: string, config: GeneratorConfig): ReadResult {
  const specs: SpecDocument[] = [];
  const problems: Problem[] = [];
  const skipped: string[] = [];
  const lineCounter = new LineCounter();
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  if (!Array.isArray(docs)) return { specs, problems, skipped }; // an empty stream
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      problems.push(...doc.errors.map((e) => yamlProblem(file, e)));
      continue;
    }
    const converted = yamlValue(file, doc);
    if ('problem' in converted) {
      problems.push(converted.problem);
      continue;
    }
    const value = converted.value;
    if (value === null || value === undefined) continue; // an empty document, e.g. a trailing `---`
    const kind = typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>).kind : undefined;
    // Other kinds may live beside the specs (a Namespace, say); a near-miss of ours is a mistake, not another kind.
    if (typeof kind === 'string' && kind !== KIND && kind.toLowerCase() !== KIND.toLowerCase()) {
      const name = (value as { metadata?: { name?: string } }).metadata?.name ?? '(unnamed)';
      skipped.push(`${file}: ${kind}/${name}`);
      continue;
    }
    const result = validateDistributedKV(value, config);
    if (result.valid) {
      const s3PathLine = result.resource.spec.backup ? lineOf(doc, S3_PATH, lineCounter) : undefined;
      specs.push({ file, resource: result.resource, line: lineOf(doc, ['metadata', 'name'], lineCounter), ...(s3PathLine !== undefined ? { s3PathLine } : {}) });
    } else {
      for (const p of result.problems) {
        problems.push({ file, path: dottedPath(p.segments), message: p.message, line: lineOf(doc, p.segments, lineCounter) });
      }
    }
  }
  return { specs, problems, skipped };
}

/** Reads every DistributedKV under the given paths (`found`: their files, when the caller has listed them already); problems in one file never hide another's. */
export function readSpecs(paths: readonly string[], config: GeneratorConfig, found = specFiles(paths)): ReadResult & { readonly inputs: SpecInputs } {
  const { files, directories } = found;
  const problems = [...found.problems];
  const specs: SpecDocument[] = [];
  const skipped: string[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      problems.push({ file, path: '', message: `cannot read: ${(e as NodeJS.ErrnoException).code ?? String(e)}` });
      continue;
    }
    const result = readSpecText(file, text, config);
    specs.push(...result.specs);
    problems.push(...result.problems);
    skipped.push(...result.skipped);
  }
  // Two specs for the same cluster would write one output file twice.
  const seen = new Map<string, string>();
  for (const { file, resource } of specs) {
    const key = `${resource.metadata.namespace ?? ''}/${resource.metadata.name}`;
    const first = seen.get(key);
    if (first) problems.push({ file, path: 'metadata.name', message: `duplicate DistributedKV ${JSON.stringify(key.replace(/^\//, ''))}, also defined in ${first}` });
    else seen.set(key, file);
  }
  // Two clusters whose generated objects share a name would overwrite each other's object.
  for (const clash of findNameClashes(specs.map((s) => s.resource), config)) problems.push(clashProblem(clash, specs));
  // Two clusters backing up into one folder, or one inside the other, would count and delete each other's backups.
  for (const clash of findS3PathClashes(specs.map((s) => s.resource))) problems.push(s3PathClashProblem(clash, specs));
  return { specs, problems, skipped, inputs: { files, directories } };
}

function clusterName(resource: ValidResource): string {
  return JSON.stringify(`${resource.metadata.namespace ? `${resource.metadata.namespace}/` : ''}${resource.metadata.name}`);
}

/** A clash, reported at the second cluster's metadata.name and naming the first cluster's file and line. */
function clashProblem({ first, second }: NameClash, specs: readonly SpecDocument[]): Problem {
  const earlier = specs[first.index];
  const later = specs[second.index];
  const { kind, namespace, name } = second.object;
  const object = `${kind} ${JSON.stringify(`${namespace ? `${namespace}/` : ''}${name}`)}`;
  const where = `${earlier.file}${earlier.line !== undefined ? ` line ${earlier.line}` : ''}`;
  return {
    file: later.file,
    path: 'metadata.name',
    line: later.line,
    message: `DistributedKV ${clusterName(second.resource)} would generate ${object} as its ${second.role}, but DistributedKV ${clusterName(first.resource)} (${where}) generates the same ${object} as its ${first.role}: the two clusters would overwrite each other's object; rename one of them`,
  };
}

/** A shared (or nested) backup folder, reported at the second cluster's spec.backup.s3Path and naming the first cluster's file and line. */
function s3PathClashProblem({ first, second, overlap }: S3PathClash, specs: readonly SpecDocument[]): Problem {
  const earlier = specs[first.index];
  const later = specs[second.index];
  const where = `${earlier.file}${earlier.s3PathLine !== undefined ? ` line ${earlier.s3PathLine}` : ''}`;
  const how = overlapPhrase(overlap, first.folder, `DistributedKV ${clusterName(first.resource)} (${where})`);
  return {
    file: later.file,
    path: S3_PATH.join('.'),
    line: later.s3PathLine,
    message: `DistributedKV ${clusterName(second.resource)} backs up into ${s3PathOf(second.folder)}, ${how}: an s3Path is one cluster's own folder, and each cluster's retention would count and delete the other's backups; give each cluster a folder apart from every other's`,
  };
}
