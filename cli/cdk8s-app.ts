/**
 * The app `cdk8s synth` runs (see cdk8s.yaml): the bundled example specs,
 * the default configuration, written to the directory cdk8s names in
 * CDK8S_OUTDIR. It goes through the same code as `dkv synth`, so both write
 * the same bytes: each manifest's header records its spec file relative to
 * the output directory, so `cdk8s synth` (CDK8S_OUTDIR=dist, run from the
 * package root) and `dkv synth --out dist` from anywhere agree. (`cdk8s synth
 * --stdout` renders into a temporary directory, so its headers differ.)
 */
import { InputError, InvalidConfigError } from '../api/problem.js';
import { EXAMPLE_SPECS, synth } from './synth-command.js';

try {
  await synth({ specs: [process.env.DKV_SPECS ?? EXAMPLE_SPECS], outDir: process.env.CDK8S_OUTDIR ?? 'dist', configFile: process.env.DKV_CONFIG });
} catch (e) {
  process.stderr.write((e instanceof InputError || e instanceof InvalidConfigError ? e.message : String(e)) + '\n');
  process.exitCode = 1;
}
