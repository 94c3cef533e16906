/**
 * The project's own image for the real node (issue 33), assembled from the
 * files the Dockerfile's final stage copies, since no `docker build` runs
 * here. The Dockerfile is read, not restated: its runtime stage's ENV,
 * WORKDIR, USER, ENTRYPOINT and CMD become the image's config, each COPY is
 * mapped to the local files it stands for, and the `dkv` launcher is the one
 * its `RUN printf` writes. A COPY this file does not know how to map is an
 * error, so the Dockerfile cannot grow a file the node's image lacks.
 *
 * What differs from a `docker build`, and why (also in test/cluster/README.md):
 * - the base is not distroless' Node.js image but this machine's Node.js 24
 *   (the pinned one in node_modules/.node) at distroless' path /nodejs/bin/node,
 *   with the shared libraries it links (glibc, libstdc++) at their paths;
 * - lib/ is this worktree's compiled output (with declarations and source
 *   maps, without lib/test and lib/bench), node_modules/ the production
 *   dependencies of the installed tree (`npm ls --omit=dev`), not a fresh
 *   `npm ci --omit=dev`;
 * - etcdutl is the one test/cluster/backup-tools/build.sh builds (the same
 *   etcd release), not the one in etcd's release image.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { ImageSpec } from './real-node.js';

/** Where distroless' nodejs24 image has Node.js; the Dockerfile's PATH and launcher name it. */
const NODE_IN_IMAGE = '/nodejs/bin/node';

export interface DockerfileRuntime {
  /** ENV pairs, NAME=VALUE. */
  readonly env: readonly string[];
  readonly workdir: string;
  readonly user: string;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  /** COPY instructions: the stage copied from, the sources (in that stage) and the destination. */
  readonly copies: readonly { readonly from: string; readonly sources: readonly string[]; readonly dest: string }[];
  /** The files a stage writes with `RUN printf '%s\n' 'line' … > PATH`, by PATH (the `dkv` launcher). */
  readonly printed: ReadonlyMap<string, string>;
}

/** Joins continuation lines; drops comments. */
function instructions(dockerfile: string): string[] {
  return dockerfile.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
}

/** The runtime (last) stage's config and copies, and the files any stage prints. */
export function readDockerfileRuntime(dockerfile: string): DockerfileRuntime {
  const lines = instructions(dockerfile);
  const printed = new Map<string, string>();
  for (const line of lines) {
    const m = /^RUN printf '%s\\n' ((?:'[^']*'\s*)+)>\s*(\S+)/.exec(line);
    if (m) printed.set(m[2], [...m[1].matchAll(/'([^']*)'/g)].map((a) => a[1]).join('\n') + '\n');
  }
  const lastFrom = lines.map((l, i) => (/^FROM\s/i.test(l) ? i : -1)).filter((i) => i >= 0).pop();
  if (lastFrom === undefined) throw new Error('Dockerfile: no FROM');
  const env: string[] = [];
  const copies: { from: string; sources: string[]; dest: string }[] = [];
  let workdir = '/';
  let user = '';
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  for (const line of lines.slice(lastFrom + 1)) {
    const [keyword, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    switch (keyword.toUpperCase()) {
      case 'ENV': env.push(...rest); break;
      case 'WORKDIR': workdir = args; break;
      case 'USER': user = args; break;
      case 'ENTRYPOINT': entrypoint = JSON.parse(args); break;
      case 'CMD': cmd = JSON.parse(args); break;
      case 'COPY': {
        const from = rest.find((a) => a.startsWith('--from='))?.slice('--from='.length) ?? 'context';
        const paths = rest.filter((a) => !a.startsWith('--'));
        copies.push({ from, sources: paths.slice(0, -1), dest: paths[paths.length - 1] });
        break;
      }
      default: throw new Error(`Dockerfile: the runtime stage has a ${keyword} instruction, which dkv-image.ts does not map: ${line}`);
    }
  }
  return { env, workdir, user, entrypoint, cmd, copies, printed };
}

/** The shared libraries a dynamically linked binary loads (ldd), with the loader. */
function sharedLibraries(binary: string): string[] {
  const r = spawnSync('ldd', [binary], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ldd ${binary}: ${r.stderr}`);
  return [...r.stdout.matchAll(/(\/\S+) \(0x/g)].map((m) => m[1]);
}

/** Top-level directories of the production dependencies (nested ones come with their parent). */
function productionPackages(root: string): string[] {
  const r = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8', maxBuffer: 16 << 20 });
  if (!r.stdout) throw new Error(`npm ls --omit=dev in ${root}: ${r.stderr}`);
  return [...new Set(r.stdout.split('\n').filter((p) => p.startsWith(join(root, 'node_modules') + '/') && !relative(join(root, 'node_modules'), p).includes('node_modules')))].sort();
}

export interface DkvImageInputs {
  /** The reference the manifests use (dkv.config.yaml's image, registry.example.com/dkv/controller:0.1.0). */
  readonly name: string;
  /** The package root: Dockerfile, lib/ (compiled), node_modules/. */
  readonly root: string;
  /** etcdutl of the etcd release the members run (test/cluster/backup-tools/build.sh). */
  readonly etcdutl: string;
  /** A scratch directory for the launcher file. */
  readonly scratch: string;
  /** The Node.js binary to put at /nodejs/bin/node. @default process.execPath */
  readonly node?: string;
  /** The Dockerfile's text. @default the root's Dockerfile */
  readonly dockerfile?: string;
}

/** The image spec (for assembleImage) of the project's image, from the Dockerfile and the local files it stands for. */
export function dkvImageSpec(inputs: DkvImageInputs): ImageSpec {
  const runtime = readDockerfileRuntime(inputs.dockerfile ?? readFileSync(join(inputs.root, 'Dockerfile'), 'utf8'));
  const node = inputs.node ?? process.execPath;
  const files = [`${node}:${NODE_IN_IMAGE}`, ...sharedLibraries(node).map((lib) => `${lib}:${lib}:0755`)];
  const trees: string[] = [];
  mkdirSync(inputs.scratch, { recursive: true });
  const dirOf = (dest: string, source: string) => (dest.endsWith('/') ? join(dest, source.split('/').pop()!) : dest);
  for (const copy of runtime.copies) {
    for (const source of copy.sources) {
      const dest = dirOf(copy.dest, source);
      if (copy.from === 'etcd' && source === '/usr/local/bin/etcdutl') {
        files.push(`${inputs.etcdutl}:${dest}`);
      } else if (copy.from === 'deps' && source === '/app/node_modules') {
        for (const pkg of productionPackages(inputs.root)) trees.push(`${pkg}:${join(dest, relative(join(inputs.root, 'node_modules'), pkg))}`);
      } else if (copy.from === 'build' && runtime.printed.has(source)) {
        const launcher = join(inputs.scratch, source.replaceAll('/', '_'));
        writeFileSync(launcher, runtime.printed.get(source)!);
        files.push(`${launcher}:${dest}:0755`);
      } else if (copy.from === 'build' && source === '/app/lib') {
        // The image's lib/ holds no tests or benchmarks (.dockerignore leaves them out of the context).
        for (const entry of readdirSync(join(inputs.root, 'lib'))) {
          if (entry === 'test' || entry === 'bench') continue;
          const local = join(inputs.root, 'lib', entry);
          if (statSync(local).isDirectory()) trees.push(`${local}:${join(dest, entry)}`);
          else files.push(`${local}:${join(dest, entry)}:0644`);
        }
      } else if (copy.from === 'build' && source.startsWith('/app/')) {
        const local = join(inputs.root, source.slice('/app/'.length));
        if (statSync(local).isDirectory()) trees.push(`${local}:${dest}`);
        else files.push(`${local}:${dest}:0644`);
      } else {
        throw new Error(`Dockerfile: COPY --from=${copy.from} ${source} ${copy.dest}: dkv-image.ts does not know which local file that is`);
      }
    }
  }
  if (!runtime.env.some((e) => e.startsWith('PATH=') && e.includes(dirname(NODE_IN_IMAGE)))) {
    throw new Error(`Dockerfile: the runtime's PATH does not name ${dirname(NODE_IN_IMAGE)}, where the node's image has Node.js`);
  }
  return { name: inputs.name, files, trees, user: runtime.user, entrypoint: runtime.entrypoint, cmd: runtime.cmd, workdir: runtime.workdir, env: runtime.env };
}
