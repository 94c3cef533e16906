/** Entry point of `dkv controller`; the reconciler is built in its own issue. */
export async function runController(_args: string[]): Promise<number> {
  process.stderr.write('dkv controller: not available in this build\n');
  return 2;
}
