/**
 * The oldest Node.js line dkv runs on, and the one line a user on an older
 * one sees instead of whatever the first missing API would throw.
 * `package.json`'s `engines` says the same (a test holds them together).
 *
 * bin/dkv.js calls this before it loads the CLI, so this module imports
 * nothing: it must load on any Node.js a user may still have.
 */

/** Node.js 24, the LTS line the product is built, tested and shipped (Dockerfile) on. */
export const MINIMUM_NODE_MAJOR = 24;

/**
 * What to tell a user whose Node.js is older than {@link MINIMUM_NODE_MAJOR},
 * given `process.version` (`v20.20.2`); undefined when it is new enough.
 */
export function unsupportedNodeMessage(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (major >= MINIMUM_NODE_MAJOR) return undefined;
  return `dkv: needs Node.js ${MINIMUM_NODE_MAJOR} or later (this is Node.js ${version.replace(/^v/, '')}); see README "Set-up"`;
}
