/**
 * Which built components a test file needs, read from its source and from
 * every test-side module it imports (transitively), so that no list of files
 * has to be kept by hand. A file that needs nothing runs in the fast lane
 * (`npm run test:unit`: no control plane, nothing built); the others run in
 * the integration lane, ordered by the last component they need, while
 * test/cluster/build-all.sh builds those components in the same order.
 *
 * Over-approximating is safe: a file that imports a helper module for one
 * function is counted as needing what that module needs, so it waits for a
 * build it might not use. Under-approximating is not, and the fast lane
 * guards against it (fast-lane-guard.ts: a fast-lane file that reaches for a
 * binary or the control plane fails, naming this file).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** In build order: test/cluster/build-all.sh builds them in exactly this order. */
export const COMPONENT_ORDER = [
  'control-plane',
  'porcupine',
  'kwok-nodes',
  'backup-tools',
  'prometheus',
  'csi-snapshotter',
  'cert-manager',
  'real-node',
  'etcd-previous',
] as const;

export type Component = (typeof COMPONENT_ORDER)[number];

/** Each component's build script under test/cluster/ and its arguments (as build-all.sh runs it). */
export const BUILD_COMMANDS: Readonly<Record<Component, readonly string[]>> = {
  'control-plane': ['build.sh', 'etcd', 'kube-apiserver', 'dkv-pki'],
  porcupine: ['porcupine/build.sh'],
  'kwok-nodes': ['build.sh', 'kube-controller-manager', 'kube-scheduler', 'kwok', 'kubectl'],
  'backup-tools': ['backup-tools/build.sh'],
  prometheus: ['prometheus/build.sh', 'prometheus'],
  'csi-snapshotter': ['csi-snapshotter/build.sh'],
  'cert-manager': ['cert-manager/build.sh'],
  'real-node': ['node/build.sh'],
  'etcd-previous': ['etcd-previous/build.sh'],
};

interface Marker {
  readonly component: Component;
  /** Matches the text of a module that needs the component. */
  readonly text?: RegExp;
  /** Or: the module is this file (relative to the package root, .ts). */
  readonly module?: string;
}

/**
 * What gives a need away. The control plane's markers are the ways a test
 * reaches etcd, kube-apiserver or a build script; each other component's is
 * the path its one caller builds to reach its build script.
 */
const MARKERS: readonly Marker[] = [
  { component: 'control-plane', module: 'test/cluster/binaries.ts' },
  { component: 'control-plane', module: 'test/cluster/kube.ts' },
  { component: 'control-plane', text: /DKV_TEST_KUBECONFIG|build\.sh/ },
  // What asks for the `withNodes` components or kubectl by name, not what merely imports the module that
  // defines them (control-plane.ts imports nodes.ts for every plane): the files that need only etcd and the
  // API server then run while kwok builds. A file this misses still waits, in its own hook, for the build.
  // (The demo's test runs the compiled script, whose plane has nodes: it names the script, not an import.)
  { component: 'kwok-nodes', text: /\bwithNodes\b|LATER_BINARIES_BUILD_MS|Binaries\(\[[^\]]*'(kubectl|kube-controller-manager|kube-scheduler|kwok)'|'demo\.js'/ },
  { component: 'porcupine', text: /'porcupine',\s*'build\.sh'/ },
  { component: 'backup-tools', text: /'backup-tools'/ },
  { component: 'prometheus', text: /'prometheus',\s*'build\.sh'/ },
  { component: 'csi-snapshotter', text: /'csi-snapshotter'/ },
  { component: 'cert-manager', text: /'cert-manager',\s*'build\.sh'/ },
  { component: 'real-node', module: 'test/cluster/real-node.ts' },
  { component: 'etcd-previous', text: /'etcd-previous'/ },
];

/** Where the binaries, the nodes and the control plane are defined: their text names every marker. */
const DEFINITIONS = ['test/cluster/binaries.ts', 'test/cluster/nodes.ts', 'test/cluster/control-plane.ts', 'test/cluster/global-setup.ts'];

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** The package root: this file lives in test/lanes/, or lib/test/lanes/ once compiled. */
export function packageRoot(from: string = dirname(new URL(import.meta.url).pathname)): string {
  const up = resolve(from, '..', '..');
  return existsSync(join(up, 'package.json')) ? up : resolve(up, '..');
}

/** Reads modules once and remembers each one's own markers and imports. */
export class ComponentNeeds {
  private readonly own = new Map<string, { needs: Set<Component>; imports: string[] }>();

  constructor(private readonly root: string = packageRoot()) {}

  /** What `testFile` (absolute, or relative to the package root) needs, in build order. */
  of(testFile: string): Component[] {
    const needs = new Set<Component>();
    const seen = new Set<string>();
    const queue = [this.source(resolve(this.root, testFile))];
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const entry = this.read(file);
      if (!entry) continue;
      for (const need of entry.needs) needs.add(need);
      queue.push(...entry.imports);
    }
    return COMPONENT_ORDER.filter((c) => needs.has(c));
  }

  /** The position in COMPONENT_ORDER of the last component the file needs; -1 for none (the fast lane). */
  rank(testFile: string): number {
    const needs = this.of(testFile);
    return needs.length === 0 ? -1 : COMPONENT_ORDER.indexOf(needs[needs.length - 1]);
  }

  /** A compiled path (lib/...js) maps to its source (....ts): the sources are what is scanned. */
  private source(file: string): string {
    const rel = relative(this.root, file);
    const fromLib = rel.startsWith(`lib/`) ? join(this.root, rel.slice(4)) : file;
    return fromLib.replace(/\.js$/, '.ts');
  }

  private read(file: string): { needs: Set<Component>; imports: string[] } | undefined {
    const cached = this.own.get(file);
    if (cached) return cached;
    // Product code never reaches a built component (nor imports test code): only the test side is read, and
    // test/lanes/ needs nothing itself.
    const rel = relative(this.root, file);
    const testSide = ['test/', 'scripts/', 'bench/'].some((dir) => rel.startsWith(dir)) && !rel.startsWith('test/lanes/');
    if (!testSide || !existsSync(file)) return undefined;
    const text = readFileSync(file, 'utf8');
    // The modules that define what the text markers ask for name them all: only their module markers count.
    const definition = DEFINITIONS.includes(rel);
    const needs = new Set<Component>();
    for (const marker of MARKERS) {
      if (marker.module === rel || (!definition && marker.text && marker.text.test(text))) needs.add(marker.component);
    }
    const imports: string[] = [];
    for (const match of text.matchAll(IMPORT)) {
      const spec = match[1] ?? match[2];
      imports.push(resolve(dirname(file), spec).replace(/\.js$/, '.ts'));
    }
    const entry = { needs, imports };
    this.own.set(file, entry);
    return entry;
  }
}
