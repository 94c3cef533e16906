import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { InputError, InvalidConfigError } from '../api/problem.js';
import { startRenderHelper } from './render-helper.js';
import { specFiles } from './spec-files.js';

const USAGE = `usage:
  dkv synth [--specs <file-or-dir>]... [--out <dir>] [--config <file>]
      Render every DistributedKV in the specs (default: the bundled examples)
      into <dir> (default: dist): one <namespace>.<name>.k8s.yaml per cluster and the CRD.
      Removes only manifests it wrote earlier from the spec files it reads this
      run, for clusters no longer in them; every other file is left alone.
  dkv validate [<file-or-dir>...] [--config <file>]
      Check specs without writing anything.
  dkv controller [--config <file>] [...]
      Run the in-cluster reconciler (see dkv controller --help).
  dkv install --out <dir> [--namespace dkv-system] [--image <ref>] [--replicas 2]
              [--watch-namespace <ns>] [--config <file>]
      Write the controller's install bundle, <dir>/dkv-install.k8s.yaml: namespace, CRD,
      RBAC, configuration, Deployment (see dkv install --help).
  dkv export --out <dir> [--namespace <ns>] [--kubeconfig <file>]
      Write every DistributedKV of a cluster as <dir>/<namespace>.<name>.yaml, without
      server-set fields, its status as a comment: what an upgrade starts with.
  dkv import --from <dir> [--kubeconfig <file>] [--overwrite]
      Apply exported definitions back: creates what is missing, leaves equal specs alone,
      refuses a different spec unless --overwrite (see dkv import --help).
  dkv migrate [--kubeconfig <file>] [--force]
      Rewrite every DistributedKV in the storage version and narrow the CRD's
      storedVersions, as the leading controller does after an upgrade.
  dkv backup --cluster <name> --namespace <ns> --size <n> --s3-path <s3://bucket/prefix> [...]
      Take one backup of one etcd cluster into S3 (see dkv backup --help).
  dkv restore --from <s3://.../stamp/> --data-dir <dir> --name <member> [...]
      Restore one etcd member from a backup before it starts, as the restore
      init container does (see dkv restore --help).
  dkv rebuild-member --data-dir <dir> --name <member> [...]
      The recover init container of every etcd member: rebuilds a one-member cluster
      from this member's data when a quorum-loss recovery names it (see --help).

Exit codes: 0 ok, 1 invalid input (every problem is listed), 2 usage or internal error.`;

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'synth': {
      // Each command loads what it needs (here the generator, cdk8s and its constructs): `dkv backup` starts in a CronJob's pod every time.
      const { values } = parseArgs({ args: rest, options: { specs: { type: 'string', multiple: true }, out: { type: 'string' }, config: { type: 'string' }, help: { type: 'boolean' } }, allowPositionals: false });
      if (values.help) {
        process.stdout.write((await import('./synth-command.js')).SYNTH_USAGE + '\n');
        return 0;
      }
      // Listed first, so a worker for many specs starts loading before this thread loads the generator (render-helper.ts).
      const found = values.specs ? specFiles(values.specs) : undefined;
      const helper = found ? startRenderHelper(found.files.length, values.config) : undefined;
      let report;
      try {
        const { EXAMPLE_SPECS, synth } = await import('./synth-command.js');
        report = await synth({ specs: values.specs ?? [EXAMPLE_SPECS], outDir: values.out ?? 'dist', configFile: values.config }, found, helper);
      } finally {
        helper?.stop();
      }
      for (const s of report.skipped) process.stderr.write(`skipped (not a DistributedKV): ${s}\n`);
      for (const r of report.removed) process.stderr.write(`removed stale manifest: ${r}\n`);
      process.stderr.write(`synthesized ${report.clusters} cluster(s) into ${values.out ?? 'dist'} (${report.files} files)\n`);
      return 0;
    }
    case 'validate': {
      const { values, positionals } = parseArgs({ args: rest, options: { config: { type: 'string' }, help: { type: 'boolean' } }, allowPositionals: true });
      const { EXAMPLE_SPECS, validate, VALIDATE_USAGE } = await import('./synth-command.js');
      if (values.help) {
        process.stdout.write(VALIDATE_USAGE + '\n');
        return 0;
      }
      const report = validate(positionals.length > 0 ? positionals : [EXAMPLE_SPECS], values.config);
      for (const warning of report.warnings) process.stderr.write(`warning: ${warning}\n`);
      process.stderr.write(`${report.clusters} DistributedKV spec(s) valid\n`);
      return 0;
    }
    case 'backup': {
      // A backup streams its snapshot through short-lived strings (each line's base64, 1.5 GB of them for 1.1 GiB):
      // V8's young generation, left to grow, doubles to 32 MiB part-way through and stays there (bench/backup/run.ts:
      // 160 MiB of peak RSS for a 1.1 GiB snapshot, 124-134 MiB with this, for 3% more CPU). V8 reads the factor at
      // each growth, so it is set before the modules load; a V8 that ignored it would only keep the memory it takes now.
      setFlagsFromString('--semi-space-growth-factor=1');
      const { backupCommand } = await import('./backup-command.js');
      return backupCommand(rest);
    }
    case 'restore': {
      const { restoreCommand } = await import('./restore-command.js');
      return restoreCommand(rest);
    }
    case 'rebuild-member': {
      const { rebuildMemberCommand } = await import('./rebuild-member-command.js');
      return rebuildMemberCommand(rest);
    }
    case 'install': {
      const { installCommand } = await import('./install-command.js');
      return installCommand(rest);
    }
    case 'export': {
      const { exportCommand } = await import('./export-command.js');
      return exportCommand(rest);
    }
    case 'import': {
      const { importCommand } = await import('./import-command.js');
      return importCommand(rest);
    }
    case 'migrate': {
      const { migrateCommand } = await import('./migrate-command.js');
      return migrateCommand(rest);
    }
    case 'controller': {
      const { runController } = await import('../reconciler/process/main.js');
      return runController(rest);
    }
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE + '\n');
      return command === undefined ? 2 : 0;
    default:
      process.stderr.write(`dkv: unknown command ${JSON.stringify(command)}\n${USAGE}\n`);
      return 2;
  }
}

/** The last line of an input error's report; the commands that write say that they wrote nothing. */
function problemsFound(count: number): string {
  return `${count} problem(s) found${['synth', 'install', 'import'].includes(process.argv[2]) ? '; nothing was written' : ''}\n`;
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (e) {
  // A configuration whose patch does not apply to a spec is bad input too, found only when rendering it.
  if (e instanceof InputError || e instanceof InvalidConfigError) {
    process.stderr.write(e.message + '\n');
    process.stderr.write(problemsFound(e.problems.length));
    process.exitCode = 1;
  } else if (e instanceof Error && e.name === 'KubeconfigError') {
    // A kubeconfig that is missing or unusable (kube/connection.ts, loaded only by the commands that reach a cluster) is the user's input too.
    process.stderr.write(`${e.message}\n${problemsFound(1)}`);
    process.exitCode = 1;
  } else if (e instanceof Error && e.name === 'UsageError') {
    // A flag value `dkv controller` cannot take (reconciler/process/controller-flags.ts, loaded only with the controller).
    process.stderr.write(`dkv: ${e.message}\n(dkv controller --help lists every flag)\n`);
    process.exitCode = 2;
  } else if (e instanceof TypeError && (e as NodeJS.ErrnoException).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`dkv: ${e.message}\n${USAGE}\n`);
    process.exitCode = 2;
  } else {
    process.stderr.write(`dkv: internal error: ${e instanceof Error ? (process.env.DKV_DEBUG ? e.stack : e.message) : String(e)}\n`);
    process.exitCode = 2;
  }
}
