export default async function globalTeardown(): Promise<void> {
  await globalThis.__DKV_CONTROL_PLANE__?.stop();
  // A run that ends before the background build does (one test file, say) stops it: Go's build cache keeps what it compiled.
  await globalThis.__DKV_BACKGROUND_BUILD__?.stop();
}
