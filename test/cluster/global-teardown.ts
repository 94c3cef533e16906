export default async function globalTeardown(): Promise<void> {
  await globalThis.__DKV_CONTROL_PLANE__?.stop();
}
