/**
 * dkv synth writes YAML with its own small writer; whatever it writes must
 * read back as exactly the data it was given, by YAML 1.2 and 1.1 parsers.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { DEFAULT_CONFIG_FILE } from '../../api/config.js';
import { yamlDocument } from '../../model/yaml-writer.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { DEFAULT_CONFIG, SIZES, kvDocument } from './support.js';
import { validateDistributedKV } from '../../api/validate.js';

const TRICKY = [
  '', ' ', ' a', 'a ', 'true', 'True', 'no', 'No', 'yes', 'on', 'off', 'y', 'n', 'null', 'Null', '~', '1', '-1', '1.5', '1e3', '0x10', '0o7', '010', '1_000', '1:20',
  '.inf', '-.inf', '.nan', '2001-12-14', 'a: b', 'a:b', 'a:', ':a', 'a #b', '#a', '- a', '-', '--', '---', '...', '*', '*a', '&a', '!x', '!!str', '@x', '%x', '`x', '|', '>',
  'a\nb', 'tab\there', '"q"', "'q'", '{a}', '[a]', '?', '? a', ',', 'a,b', 'café', '日本', 'registry.example.com:5000/kv/server:1.4.2', 's3://bucket/p', '*/15 * * * *', '@daily',
  'x'.repeat(300), '\\', 'a\\nb', '\u0000', '=', '<<',
];

function roundTrips(value: Record<string, unknown>): void {
  const text = yamlDocument(value);
  expect(parse(text)).toEqual(value);
  expect(parse(text, { version: '1.1' })).toEqual(value);
}

describe('the YAML writer', () => {
  it('reads back every tricky string as the same string, as a value and as a key', () => {
    for (const s of TRICKY) {
      roundTrips({ value: s });
      roundTrips({ [s]: 1 });
      roundTrips({ list: [s, [s], { k: s }] });
    }
  });

  it('writes a multi-line value as a literal block that reads back as the same text, nested or not', () => {
    const config = readFileSync(DEFAULT_CONFIG_FILE, 'utf8');
    for (const text of [config, 'a\nb', 'a\n', 'a\n\n', 'a\n\n\n', 'a\n\nb', 'a\n  b\n', '# c\nx: 1\n---\n...\n- y\n', 'key: |\n  nested\n']) {
      roundTrips({ data: { 'file.yaml': text } });
      roundTrips({ list: [{ k: text, z: 1 }] });
    }
    expect(yamlDocument({ data: { 'dkv.config.yaml': config } })).toBe(`data:\n  dkv.config.yaml: |\n${config.replace(/\n$/, '').split('\n').map((l) => (l ? `    ${l}\n` : '\n')).join('')}`);
  });

  it('quotes multi-line text a literal block would change', () => {
    for (const text of [' a\nb', '\na', 'a \nb', 'a\n \nb', 'a\tb\nc', 'a\r\nb', 'a\u2028b\nc', 'a\u0085\nb', 'a\n ']) {
      roundTrips({ value: text });
      expect(yamlDocument({ value: text })).toBe(`value: ${JSON.stringify(text)}\n`);
    }
  });

  it('keeps numbers, booleans, null, empty maps and lists, and nesting', () => {
    roundTrips({ n: 0, f: 1.5, neg: -3, t: true, f2: false, z: null, em: {}, el: [], deep: { a: [{ b: [1, { c: [] }] }, [[2]], []] } });
  });

  it('reads back every object generated for every size, with and without backup', () => {
    for (const size of SIZES) {
      for (const backup of [false, true]) {
        const result = validateDistributedKV(kvDocument({ size, backup: backup ? { s3Path: 's3://b/x', schedule: '*/5 * * * *' } : undefined }), DEFAULT_CONFIG);
        if (!result.valid) throw new Error('invalid fixture');
        for (const object of synthesizeCluster(result.resource, DEFAULT_CONFIG)) roundTrips(object as Record<string, unknown>);
      }
    }
  });
});
