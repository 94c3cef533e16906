/**
 * dkv synth reads plain spec files with js-yaml (cli/plain-yaml.ts) and
 * everything else with `yaml`, which keeps lines. The quick reading must give
 * exactly the values `yaml` gives, or decline: a file never means one thing
 * to one parser and another thing to the other.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { API_VERSION, KIND } from '../../api/validate.js';
import { plainYamlDocuments } from '../../cli/plain-yaml.js';
import { readSpecs, readSpecText } from '../../cli/read-specs.js';
import { EXAMPLE_SPECS } from '../../cli/synth-command.js';
import { fleetSpec } from '../support/fleet-specs.js';
import { DEFAULT_CONFIG } from './support.js';

/** What `yaml` makes of a text, as read-specs.ts reads it (every document, toJS), or undefined when it reports an error. */
function yamlValues(text: string): unknown[] | undefined {
  const docs = parseAllDocuments(text, { uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [];
  if (list.some((doc) => doc.errors.length > 0)) return undefined;
  return list.map((doc) => doc.toJS({ maxAliasCount: 100 }));
}

function fleetText(i: number): string {
  const name = `kv-${i}`;
  const namespace = `team-${i % 10}`;
  return stringify({ apiVersion: API_VERSION, kind: KIND, metadata: { name, namespace }, spec: fleetSpec(i, name, namespace) });
}

/** Plain scalars that YAML 1.1, js-yaml's own core schema and `yaml` do not all read alike, and other forms worth a look. */
const SCALARS = [
  '', '~', 'null', 'Null', 'NULL', 'nULL', 'true', 'True', 'TRUE', 'tRUE', 'false', 'yes', 'no', 'on', 'off', 'y', 'n',
  '0', '-0', '+0', '12', '+12', '-12', '012', '0o17', '-0o17', '0o8', '0x1F', '0X1F', '-0x1F', '0b101', '1_000', '1:20', '1:20:30',
  '9'.repeat(400), '1.', '.5', '-.5', '1.50', '1e3', '1E3', '-1.5e-3', '1e', 'e3', '.inf', '-.Inf', '+.INF', '.nan', '.NaN', '-.nan', 'inf', 'NaN',
  '2026-01-01', '2026-01-01T10:00:00Z', '100m', '4Gi', '0.5', '1.0', 's3://bucket/x', '@daily', '*/15 * * * *', 'a b', 'a: b c', "it's",
];

/** Texts that use every scalar style, collection style and document marker. */
const FORMS = [
  'a: |\n  line one\n  line two\n\nb: x\n',
  'a: |-\n  kept\n\n\nb: |+\n  kept\n\n',
  'a: >\n  folded\n  text\n\n  para\nb: >-\n  x\n   more-indented\n  y\n',
  'a: "esc \\t \\n \\u00e9 \\x41 \\\\ \\" end"\nb: \'single \'\' quote\'\nc: "multi\n  line"\n',
  'a: plain\n  multi line\n  scalar\n',
  'a: {b: 1, c: [1, 2, {d: e}], "f g": ~}\nh: [ ]\ni: { }\n',
  '- 1\n- - 2\n  - 3\n- k: v\n  l: w\n',
  '# comment\na: 1 # trailing\n# end\n',
  '---\na: 1\n...\n---\nb: 2\n',
  '---\n---\na: 1\n---\n',
  '"quoted key": 1\n\'single key\': 2\n? complex explicit\n: 3\n',
  'a:\n- 1\n- 2\nb:\n  - 3\n',
  'empty:\nnested:\n  also:\n',
];

describe('the quick reading of a spec file (js-yaml)', () => {
  it('gives the values yaml gives for the examples and 1,000 fleet specs', () => {
    const examples = readdirSync(EXAMPLE_SPECS).map((f) => readFileSync(join(EXAMPLE_SPECS, f), 'utf8'));
    const texts = [...examples, ...Array.from({ length: 1000 }, (_, i) => fleetText(i))];
    for (const text of texts) {
      const quick = plainYamlDocuments(text);
      expect(quick).toBeDefined();
      expect(quick).toStrictEqual(yamlValues(text));
    }
  });

  it('reads every plain scalar as yaml does, as a value, in a list and in flow, and declines what yaml calls broken', () => {
    for (const s of SCALARS) {
      for (const text of [`v: ${s}\n`, `- ${s}\n`, `v: [${s}]\n`, `v: {k: ${s}}\n`]) {
        const quick = plainYamlDocuments(text);
        expect({ text, value: quick }).toStrictEqual({ text, value: yamlValues(text) });
      }
    }
  });

  it('reads every scalar style, collection style and document marker as yaml does', () => {
    for (const text of FORMS) {
      expect({ text, value: plainYamlDocuments(text) }).toStrictEqual({ text, value: yamlValues(text) });
      expect({ text, value: yamlValues(text) }).not.toEqual({ text, value: undefined }); // each form is valid YAML
    }
  });

  it('declines what only yaml judges: tags, anchors, aliases, directives, keys that are not plain strings, duplicates, broken YAML', () => {
    const declined = [
      'a: !!str 1\n', 'a: !custom x\n', '!!map {a: 1}\n', 'a: &x 1\nb: *x\n', 'a: &x {b: 1}\n', '%YAML 1.1\n---\na: yes\n', '%TAG !e! tag:example.com,2000:\n---\na: 1\n',
      '1: a\n', 'true: a\n', '~: a\n', '1.5: a\n', '[a]: b\n', '{a: 1}: b\n', '<<: {a: 1}\n', '__proto__: {a: 1}\n', 'a: 1\na: 2\n', 'a: 1\n"a": 2\n',
      'a: [1\n', 'a:\n\t- b\n', 'a: "open\n', 'a: b: c\n', '- a\nb: c\n', 'a: 1\rb: 2\n',
    ];
    for (const text of declined) expect({ text, value: plainYamlDocuments(text) }).toEqual({ text, value: undefined });
  });
});

/** Mutations of a valid spec: the pieces YAML's grammar turns on, and a few characters parsers have read differently. */
const PIECES = [' ', '  ', '\n', '\t', '\r', '\r\n', ':', '-', '- ', '#', ' #', '"', "'", '|', '>', '[', ']', '{', '}', ',', '?', '? ', '&a ', '*a', '!', '%', '@', '`',
  '---', '...', '\\', '0', '1', '.', 'e', 'x', 'null', 'true', '~', '\u00a0', '\ufeff', '\u0085', '\u2028', 'é', '0x', '0o', '.inf', '<<', 'a: b', '\n  ', '\n- '];

describe('the quick reading, on mutated specs', () => {
  it('gives yaml\'s values or declines, for 5,000 seeded mutations of fleet specs', () => {
    let seed = 42;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const specs = Array.from({ length: 30 }, (_, i) => fleetText(i));
    let read = 0;
    for (let k = 0; k < 5000; k++) {
      let text = specs[random(specs.length)];
      for (let m = 1 + random(3); m > 0; m--) {
        const at = random(text.length + 1);
        text = text.slice(0, at) + PIECES[random(PIECES.length)] + text.slice(at + (random(3) === 0 ? random(4) : 0));
      }
      const quick = plainYamlDocuments(text);
      if (quick === undefined) continue;
      read++;
      expect({ text, value: quick }).toStrictEqual({ text, value: yamlValues(text) });
    }
    expect(read).toBeGreaterThan(1000); // most mutations leave plain YAML: the comparison is not vacuous
  });
});

describe('a spec read the quick way', () => {
  const text = ['# the orders cluster', `apiVersion: ${API_VERSION}`, `kind: ${KIND}`, 'metadata:', '  namespace: shop', '  name: orders', 'spec:', '  size: 3', '  image: registry.example.com/kv/server:1.2.0', '  backup:', '    schedule: "@daily"', '    s3Path: s3://acme/shop/orders', ''].join('\n');

  it('knows the lines of its name and its s3Path, as the thorough reading does', () => {
    const read = readSpecText('orders.yaml', text, DEFAULT_CONFIG);
    expect(read.problems).toEqual([]);
    expect(read.specs).toHaveLength(1);
    expect(read.specs[0].line).toBe(6);
    expect(read.specs[0].s3PathLine).toBe(12);
  });

  it('names both clusters\' lines in a clash between two files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dkv-plain-yaml-'));
    try {
      writeFileSync(join(dir, 'a.yaml'), text);
      writeFileSync(join(dir, 'b.yaml'), text.replace('name: orders', 'name: carts').replace('# the orders cluster\n', ''));
      const { problems } = readSpecs([dir], DEFAULT_CONFIG);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatchObject({ file: join(dir, 'b.yaml'), path: 'spec.backup.s3Path', line: 11 });
      expect(problems[0].message).toContain(`(${join(dir, 'a.yaml')} line 12)`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
