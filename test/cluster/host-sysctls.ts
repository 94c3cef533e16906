/**
 * The kernel settings a kubelet rewrites host-wide (real-node.ts), put back
 * when the last real node on this machine stops.
 *
 * Nodes of different test processes can overlap (a developer's run beside
 * another's, two test files in two jest processes): if each node put back
 * what it found at its own start, one that started while another's kubelet
 * ran would find the kubelet's values and leave them behind when it stopped
 * last. So the values found while no node ran (the baseline) are kept in
 * /run/dkv-real-nodes/baseline.json, each running node holds a file there
 * naming its process, and the node that stops while no other holder's
 * process is alive writes the baseline back and removes it. A baseline left
 * by a process that died before stopping its node is the true one still,
 * and is used as it is.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface HostSysctlsPaths {
  /** Where the baseline, the holders and the lock live. @default /run/dkv-real-nodes */
  readonly dir: string;
  /** The settings' root. @default /proc/sys */
  readonly procSys: string;
}
const DEFAULT_PATHS: HostSysctlsPaths = { dir: '/run/dkv-real-nodes', procSys: '/proc/sys' };
/** A lock older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 10_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `body` holding the directory lock (mkdir is atomic): nodes starting or stopping at once take turns. */
function locked<T>(dir: string, body: () => T): T {
  const LOCK = join(dir, 'lock');
  mkdirSync(dir, { recursive: true });
  const deadline = Date.now() + 2 * STALE_LOCK_MS;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS) rmdirSync(LOCK);
      } catch {
        /* released meanwhile */
      }
      if (Date.now() > deadline) throw new Error(`${LOCK}: still held after ${2 * STALE_LOCK_MS} ms`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  try {
    return body();
  } finally {
    rmdirSync(LOCK);
  }
}

/** The other holders whose process is alive (dead ones' files are removed). */
function liveHolders(HOLDERS: string, except: string): string[] {
  mkdirSync(HOLDERS, { recursive: true });
  return readdirSync(HOLDERS).filter((name) => {
    if (name === except) return false;
    const pid = Number(readFileSync(join(HOLDERS, name), 'utf8'));
    if (alive(pid)) return true;
    rmSync(join(HOLDERS, name), { force: true });
    return false;
  });
}

/**
 * Registers node `name` before its kubelet starts; the returned function,
 * called once the kubelet has stopped, unregisters it and, if it was the
 * last, writes the baseline of `keys` (paths under /proc/sys) back.
 */
export function holdHostSysctls(name: string, keys: readonly string[], paths: HostSysctlsPaths = DEFAULT_PATHS): () => void {
  const BASELINE = join(paths.dir, 'baseline.json');
  const HOLDERS = join(paths.dir, 'holders');
  locked(paths.dir, () => {
    mkdirSync(HOLDERS, { recursive: true });
    if (!existsSync(BASELINE)) {
      writeFileSync(BASELINE, JSON.stringify(Object.fromEntries(keys.map((k) => [k, readFileSync(join(paths.procSys, k), 'utf8').trim()]))));
    }
    writeFileSync(join(HOLDERS, name), String(process.pid));
  });
  let released = false;
  return () => {
    if (released) return;
    released = true;
    locked(paths.dir, () => {
      rmSync(join(HOLDERS, name), { force: true });
      if (liveHolders(HOLDERS, name).length > 0 || !existsSync(BASELINE)) return;
      const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as Record<string, string>;
      for (const [k, v] of Object.entries(baseline)) {
        try {
          writeFileSync(join(paths.procSys, k), v);
        } catch {
          /* read-only here: the kubelet could not have changed it either */
        }
      }
      rmSync(BASELINE, { force: true });
    });
  };
}
