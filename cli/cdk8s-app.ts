/**
 * The app `cdk8s synth` runs (see cdk8s.yaml): the bundled example specs,
 * the default configuration, written to the directory cdk8s names in
 * CDK8S_OUTDIR. It goes through the same code as `dkv synth`, so both write
 * the same bytes.
 */
import { InputError } from '../api/problem.js';
import { EXAMPLE_SPECS, synth } from './synth-command.js';

try {
  synth({ specs: [process.env.DKV_SPECS ?? EXAMPLE_SPECS], outDir: process.env.CDK8S_OUTDIR ?? 'dist', configFile: process.env.DKV_CONFIG });
} catch (e) {
  process.stderr.write((e instanceof InputError ? e.message : String(e)) + '\n');
  process.exitCode = 1;
}
