import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './package-root.js';

/** The JSON Schema every other form of the API is derived from (it describes the storage version; see api/versions.ts). */
export const SCHEMA: Record<string, any> = JSON.parse(readFileSync(join(packageRoot(), 'api', 'distributedkv.schema.json'), 'utf8'));
