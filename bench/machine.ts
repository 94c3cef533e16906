/**
 * What a benchmark's figures were measured on, printed beside them: a figure
 * means little without the runtime and the machine (docs/performance.md's
 * figures carry both, with the date and the command).
 */
import { arch, cpus, platform } from 'node:os';

/** `node v24.21.0, linux x64, 2 CPU(s) (AMD EPYC 7763 64-Core Processor)`. */
export function runtimeAndMachine(): string {
  const cores = cpus();
  const model = cores[0]?.model.trim();
  return `node ${process.version}, ${platform()} ${arch()}, ${cores.length} CPU(s)${model ? ` (${model})` : ''}`;
}
