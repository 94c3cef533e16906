#!/usr/bin/env node
// The runtime is checked before the CLI loads: on an older Node.js a user gets one
// line and exit 2 (a usage error), not a stack trace from the first missing API.
import { fileURLToPath, URL } from 'node:url';
import { unsupportedNodeMessage } from '../lib/cli/supported-node.js';

const refusal = unsupportedNodeMessage(process.version);
if (refusal !== undefined) {
  process.stderr.write(refusal + '\n');
  process.exitCode = 2;
} else {
  // Before the CLI's modules load, so they come from the compile cache (cli/compile-cache.ts).
  const { useCompileCache } = await import('../lib/cli/compile-cache.js');
  useCompileCache(fileURLToPath(new URL('../node_modules/.cache/dkv-compile-cache/', import.meta.url)));
  await import('../lib/cli/main.js');
}
