/**
 * etcd's logical snapshot, streamed from one member through the maintenance
 * API's HTTP/JSON gateway (`POST /v3/maintenance/snapshot`). The snapshot is
 * consistent by itself (etcd serialises it from one read transaction), so
 * the store needs no quiesce; its last 32 bytes are etcd's own sha256 of the
 * rest, which `etcdutl snapshot restore` checks.
 *
 * The gateway answers with one JSON message per line, each holding a
 * base64 chunk (`{"result":{"remaining_bytes":"…","blob":"…"}}`), or an
 * `{"error":…}` that ends the stream. Chunks are yielded as they arrive:
 * nothing holds the whole snapshot.
 */

export class SnapshotError extends Error {}

interface SnapshotMessage {
  result?: { blob?: string; remaining_bytes?: string; remainingBytes?: string };
  error?: { message?: string; grpc_code?: number; http_code?: number };
}

/** One message's bytes, and whether it is the last (nothing remains; the gateway omits a zero, so no field means none). */
function chunkOf(line: string, endpoint: string): { bytes: Buffer; last: boolean } {
  let message: SnapshotMessage;
  try {
    message = JSON.parse(line) as SnapshotMessage;
  } catch {
    throw new SnapshotError(`${endpoint}: the snapshot stream holds a line that is not JSON (${line.slice(0, 80)}…)`);
  }
  if (message.error) throw new SnapshotError(`${endpoint}: the member ended the snapshot: ${message.error.message ?? JSON.stringify(message.error)}`);
  const blob = message.result?.blob;
  const remaining = message.result?.remaining_bytes ?? message.result?.remainingBytes;
  return { bytes: blob ? Buffer.from(blob, 'base64') : Buffer.alloc(0), last: remaining === undefined || Number(remaining) === 0 };
}

/**
 * The snapshot's bytes, chunk by chunk. Aborting `signal` (a deadline, a
 * killed runner) cuts the stream off; a stream that ends without the
 * member's last message (`remaining_bytes` 0) is an error, never a short
 * snapshot taken for a whole one.
 */
export async function* etcdSnapshot(endpoint: string, signal?: AbortSignal): AsyncGenerator<Buffer> {
  const response = await fetch(`${endpoint}/v3/maintenance/snapshot`, {
    method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json' }, signal,
  }).catch((e: Error) => {
    throw new SnapshotError(`${endpoint}: cannot ask for a snapshot: ${e.cause ? String(e.cause) : e.message}`);
  });
  if (!response.ok || !response.body) throw new SnapshotError(`${endpoint}: snapshot refused: ${response.status} ${await response.text()}`);
  const decoder = new TextDecoder();
  let pending = '';
  let finished = false;
  const take = (line: string): Buffer | undefined => {
    if (!line.trim()) return undefined;
    const { bytes, last } = chunkOf(line, endpoint);
    finished = last;
    return bytes;
  };
  for await (const bytes of response.body as AsyncIterable<Uint8Array>) {
    pending += decoder.decode(bytes, { stream: true });
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const chunk = take(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
      if (chunk && chunk.length > 0) yield chunk;
    }
  }
  const last = take(pending + decoder.decode());
  if (last && last.length > 0) yield last;
  if (!finished) throw new SnapshotError(`${endpoint}: the snapshot stream ended before the member's last chunk`);
}
