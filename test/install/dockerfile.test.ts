/**
 * The Dockerfile at the repository root builds the one image the install
 * bundle's Deployment, every backup CronJob and every restore init
 * container run. Without a Docker engine, what can be checked is what the
 * file says: base images pinned by digest, a numeric non-root user (the one
 * the pods run as), `dkv` as the entrypoint and on the PATH with `etcdutl`,
 * production dependencies only, and every file the compiled CLI loads (and
 * every runtime file of the npm package) both in the build context and
 * copied into the runtime stage.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, posix, relative } from 'node:path';
import { renderInstall } from '../../cli/install-command.js';
import { MINIMUM_NODE_MAJOR } from '../../cli/supported-node.js';
import { CONTROLLER_USER } from '../../constructs/install/controller-deployment.js';
import { ROOT, byRole, removeTemporaryDirectories, synth, temporaryDirectory } from '../generator/support.js';

afterAll(removeTemporaryDirectories);

interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

interface Stage {
  readonly image: string;
  readonly name?: string;
  readonly instructions: readonly Instruction[];
}

/** The Dockerfile's stages, continuation lines joined, comments dropped, global ARG defaults substituted into FROM. */
function parseDockerfile(text: string): Stage[] {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  const globals: Record<string, string> = {};
  const stages: { image: string; name?: string; instructions: Instruction[] }[] = [];
  for (const line of lines) {
    const [, keyword, args] = /^(\S+)\s+(.*)$/.exec(line)!;
    const upper = keyword.toUpperCase();
    if (upper === 'ARG' && stages.length === 0) {
      const [name, value] = args.split('=');
      globals[name] = value;
    } else if (upper === 'FROM') {
      const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args)!;
      stages.push({ image: image.replace(/\$\{(\w+)\}/g, (_, v: string) => globals[v]), name, instructions: [] });
    } else {
      stages.at(-1)!.instructions.push({ keyword: upper, args });
    }
  }
  return stages;
}

const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const stages = parseDockerfile(dockerfile);
const runtime = stages.at(-1)!;
const stage = (name: string): Stage => stages.find((s) => s.name === name)!;
const all = (s: Stage, keyword: string): string[] => s.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
const last = (s: Stage, keyword: string): string | undefined => all(s, keyword).at(-1);

/** What a COPY into the runtime stage brings: from which stage, which sources, to where. */
interface Copy {
  readonly from?: string;
  readonly sources: readonly string[];
  readonly destination: string;
}

const copies: Copy[] = all(runtime, 'COPY').map((args) => {
  const words = args.split(/\s+/);
  const from = words.find((w) => w.startsWith('--from='))?.slice('--from='.length);
  const paths = words.filter((w) => !w.startsWith('--'));
  return { from, sources: paths.slice(0, -1), destination: paths.at(-1)! };
});

/**
 * The runtime stage's COPY that puts the build stage's `path` at the same
 * path, if any: a directory source copies its contents into the
 * destination, several sources go into the destination directory by name.
 */
function copiedFrom(from: string, path: string): Copy | undefined {
  return copies.find((c) => c.from === from && c.sources.some((source) => {
    const target = c.sources.length > 1 || c.destination.endsWith('/') ? posix.join(c.destination, posix.basename(source)) : c.destination;
    return source === target && (path === source || path.startsWith(`${source}/`));
  }));
}

/** Docker's .dockerignore for this allow list's shape: `*`, then `!path` exceptions; the last matching line decides. */
function inBuildContext(path: string): boolean {
  let included = true;
  for (const rule of readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'))) {
    const negated = rule.startsWith('!');
    const pattern = rule.replace(/^!/, '').replace(/\/$/, '');
    if (pattern === '*' || path === pattern || path.startsWith(`${pattern}/`)) included = negated;
  }
  return included;
}

const IMPORT_SPECIFIER = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)'([^']+)'/gm;

/** The source files the compiled CLI loads, from bin/dkv.js through every relative import (static and dynamic), and the packages they import. */
function cliImportGraph(): { sources: Set<string>; packages: Set<string> } {
  const sources = new Set<string>();
  const packages = new Set<string>();
  // bin/dkv.js is JavaScript that loads the compiled lib/ (the runtime check, then the CLI): each of its imports names a source file.
  const pending = [...readFileSync(join(ROOT, 'bin', 'dkv.js'), 'utf8').matchAll(IMPORT_SPECIFIER)]
    .filter(([, specifier]) => specifier.startsWith('.')) // node: built-ins are not files
    .map(([, specifier]) => relative('lib', normalize(join('bin', specifier))).replace(/\.js$/, '.ts'));
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (sources.has(file)) continue;
    sources.add(file);
    const text = readFileSync(join(ROOT, file), 'utf8').split('\n').filter((l) => !/^\s*(?:import|export)\s+type\s/.test(l)).join('\n');
    for (const [, specifier] of text.matchAll(IMPORT_SPECIFIER)) {
      if (specifier.startsWith('.')) pending.push(normalize(join(dirname(file), specifier)).replace(/\.js$/, '.ts'));
      else if (!specifier.startsWith('node:')) packages.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]);
    }
  }
  return { sources, packages };
}

describe('the Dockerfile', () => {
  it('pins every base image by digest', () => {
    const names = new Set(stages.map((s) => s.name).filter(Boolean));
    for (const { image } of stages) {
      if (names.has(image)) continue;
      expect(image).toMatch(/^[a-z0-9.-]+(?::[0-9]+)?\/?[^@\s]*@sha256:[0-9a-f]{64}$/);
    }
    expect(stages.map((s) => s.image)).toEqual(expect.arrayContaining([expect.stringMatching(/^gcr\.io\/etcd-development\/etcd:v3\.6\.8@sha256:/)]));
  });

  it('builds and runs on the Node.js line package.json\'s engines asks for: node:<major> to build, distroless nodejs<major> (nonroot) to run', () => {
    const { engines } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    expect(engines.node).toBe(`>=${MINIMUM_NODE_MAJOR}`);
    expect(runtime.image).toMatch(new RegExp(`^gcr\\.io/distroless/nodejs${MINIMUM_NODE_MAJOR}-debian\\d+:nonroot@sha256:`));
    for (const name of ['deps', 'build']) expect({ stage: name, image: stage(name).image }).toEqual({ stage: name, image: expect.stringMatching(new RegExp(`^node:${MINIMUM_NODE_MAJOR}-`)) });
  });

  it('runs as a numeric non-root user, the one the install bundle\'s pods and the backup Jobs run as', () => {
    const [user, group] = last(runtime, 'USER')!.split(':');
    expect(user).toMatch(/^[0-9]+$/);
    expect(Number(user)).toBeGreaterThan(0);
    if (group !== undefined) expect(Number(group)).toBeGreaterThan(0);
    expect(Number(user)).toBe(CONTROLLER_USER);
    const deployment = renderInstall().find((o) => o.kind === 'Deployment') as any;
    expect(deployment.spec.template.spec.securityContext.runAsUser).toBe(Number(user));
    const { cronJob } = byRole(synth({ backup: { s3Path: 's3://b/x', schedule: '@daily' } }));
    expect(cronJob!.spec.jobTemplate.spec.template.spec.securityContext.runAsUser).toBe(Number(user));
  });

  it('enters through dkv: ENTRYPOINT ["node", "/app/bin/dkv.js"], with node on the PATH', () => {
    expect(JSON.parse(last(runtime, 'ENTRYPOINT')!)).toEqual(['node', '/app/bin/dkv.js']);
    expect(copiedFrom('build', '/app/bin/dkv.js')).toBeDefined();
    expect(runtimePath()).toContain('/nodejs/bin'); // where distroless' Node.js lives
  });

  it('has dkv and etcdutl on the PATH, as the backup CronJob ([dkv, backup]) and the restore init container ([dkv, restore]) call them', () => {
    for (const tool of ['dkv', 'etcdutl']) {
      const copy = copies.find((c) => posix.basename(c.destination) === tool);
      expect(copy).toBeDefined();
      expect(runtimePath()).toContain(posix.dirname(copy!.destination));
    }
    expect(copies.find((c) => c.destination.endsWith('/etcdutl'))).toMatchObject({ from: 'etcd', sources: ['/usr/local/bin/etcdutl'] });
    const { cronJob } = byRole(synth({ backup: { s3Path: 's3://b/x', schedule: '@daily' } }));
    expect(cronJob!.spec.jobTemplate.spec.template.spec.containers[0].command).toEqual(['dkv', 'backup']);
    expect(readFileSync(join(ROOT, 'engines', 'etcd', 'restore-container.ts'), 'utf8')).toContain("command: ['dkv', 'restore']");
  });

  it('makes a dkv that runs the CLI with its arguments', () => {
    const printf = all(stage('build'), 'RUN').find((r) => r.includes('/usr/local/bin/dkv'))!;
    const [, quoted] = /printf '%s\\n' (.*?) > \/usr\/local\/bin\/dkv/.exec(printf)!;
    const script = [...quoted.matchAll(/'([^']*)'/g)].map((m) => m[1]).join('\n') + '\n';
    expect(printf).toContain('chmod 0755 /usr/local/bin/dkv');
    expect(script.split('\n')[0]).toBe('#!/nodejs/bin/node');
    // Here, with this machine's node and this checkout in place of /app.
    const wrapper = join(temporaryDirectory('dkv-image-'), 'dkv');
    writeFileSync(wrapper, script.replace('#!/nodejs/bin/node', `#!${process.execPath}`).replace('/app/', `${ROOT}/`));
    chmodSync(wrapper, 0o755);
    const result = spawnSync(wrapper, ['install', '--help'], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^usage: dkv install/);
  });

  it('installs production dependencies only, compiles in a build stage, and runs nothing in the runtime stage', () => {
    expect(all(stage('deps'), 'RUN').join('\n')).toMatch(/\bnpm ci --omit=dev\b/);
    expect(all(stage('build'), 'RUN').join('\n')).toMatch(/\bnpm ci\b/);
    expect(all(stage('build'), 'RUN').join('\n')).toMatch(/\btsc -p \./);
    expect(copies.filter((c) => c.sources.some((s) => s.includes('node_modules')))).toEqual([{ from: 'deps', sources: ['/app/node_modules'], destination: '/app/node_modules' }]);
    expect(all(runtime, 'RUN')).toEqual([]); // distroless: no shell to run it
    expect(copies.every((c) => c.from !== undefined)).toBe(true); // nothing from the build context itself
  });

  it('imports only production dependencies from the code the CLI loads', () => {
    const { dependencies } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    for (const name of cliImportGraph().packages) expect({ name, production: name in dependencies }).toEqual({ name, production: true });
  });

  it('holds every module the compiled CLI loads: its source in the build context, its JavaScript in the runtime stage', () => {
    const { sources } = cliImportGraph();
    expect([...sources]).toEqual(expect.arrayContaining(['cli/supported-node.ts', 'cli/main.ts']));
    expect(sources.size).toBeGreaterThan(50);
    for (const source of sources) {
      expect({ source, inBuildContext: inBuildContext(source) }).toEqual({ source, inBuildContext: true });
      expect({ source, copied: copiedFrom('build', `/app/lib/${source.replace(/\.ts$/, '.js')}`) !== undefined }).toEqual({ source, copied: true });
    }
    expect(inBuildContext('tsconfig.json')).toBe(true);
  });

  it('holds the files the code reads at runtime: package.json (the package root), the schemas, the default configuration and the example specs', () => {
    const read = [
      ['api/package-root.ts', "'package.json'", 'package.json'],
      ['api/schema.ts', "'distributedkv.schema.json'", 'api/distributedkv.schema.json'],
      // api/config.schema.json is not read at runtime: its validator is compiled at build time (imports/config-validator.ts).
      ['api/config.ts', "'dkv.config.yaml'", 'dkv.config.yaml'],
      ['cli/synth-command.ts', "'examples'", 'examples/orders.yaml'],
      ['cli/synth-command.ts', "'examples'", 'examples/dev.yaml'],
    ];
    for (const [reader, literal, file] of read) {
      expect(readFileSync(join(ROOT, reader), 'utf8')).toContain(literal);
      expect(existsSync(join(ROOT, file))).toBe(true);
      expect({ file, inBuildContext: inBuildContext(file), copied: copiedFrom('build', `/app/${file}`) !== undefined }).toEqual({ file, inBuildContext: true, copied: true });
    }
  });

  it('holds every runtime file the npm package ships (npm pack), JavaScript compiled from the build context', () => {
    const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    const runtimeFiles = (pack.files as { path: string }[]).map((f) => f.path).filter((p) => !/\.(?:d\.ts|map|md)$/.test(p));
    expect(runtimeFiles).toEqual(expect.arrayContaining(['bin/dkv.js', 'dkv.config.yaml', 'package.json']));
    for (const file of runtimeFiles) {
      const source = file.startsWith('lib/') ? relative('lib', file).replace(/\.js$/, '.ts') : file;
      expect({ file, inBuildContext: inBuildContext(source), copied: copiedFrom('build', `/app/${file}`) !== undefined }).toEqual({ file, inBuildContext: true, copied: true });
    }
  });
});

/** The runtime stage's PATH. */
function runtimePath(): string[] {
  const env = all(runtime, 'ENV').join(' ');
  return /\bPATH=(\S+)/.exec(env)![1].split(':');
}
