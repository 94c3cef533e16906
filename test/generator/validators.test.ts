import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { configValidatorModule, specValidatorsModule } from '../../api/validator-code.js';
import { SERVED_VERSIONS } from '../../api/versions.js';
import * as specValidators from '../../imports/spec-validators.js';

const committed = (file: string): string => readFileSync(join(packageRoot(), 'imports', file), 'utf8');

describe('the validators compiled at build time', () => {
  it('are what ajv compiles from today\'s spec schema (run npm run generate after changing it)', () => {
    expect(committed('spec-validators.ts')).toBe(specValidatorsModule());
  });

  it('are what ajv compiles from today\'s configuration schema', () => {
    expect(committed('config-validator.ts')).toBe(configValidatorModule());
  });

  it('cover every served version', () => {
    for (const version of SERVED_VERSIONS) expect(typeof (specValidators as Record<string, unknown>)[version]).toBe('function');
  });

  it('fill in the schema defaults, as the CRD does on the server', () => {
    const spec: Record<string, unknown> = { size: 3, image: 'registry.k8s.io/etcd:3.6.8-0' };
    expect(specValidators.v1beta1(spec)).toBe(true);
    expect(spec.storage).toEqual({ size: '10Gi' });
  });
});
