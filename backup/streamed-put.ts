/**
 * One object uploaded as one PutObject whose body is streamed as it comes,
 * for a source that knows its length before its first byte (an etcd
 * snapshot does: engines/etcd/snapshot.ts). Against parts
 * (multipart-upload.ts) this leaves out, per byte: the copy into a part
 * buffer, the sha256 that signing a buffered part costs the runner and the
 * store again to check it, and the store's assembly of the parts on
 * completion (versitygw copies every part into the object: 0.1 s at
 * 116 MiB); and the 16 MiB of part buffers. `npm run bench:backup` measured
 * it (docs/performance.md).
 *
 * What checks the bytes instead: a streamed body is signed as
 * `UNSIGNED-PAYLOAD` (the SDK cannot hash what it has not read), so in
 * transit they are protected by TLS on an https endpoint, as AWS's own
 * streaming uploads are; the whole object's sha256 goes into the backup's
 * manifest, which every restore checks before a member starts on it
 * (backup/backup-source.ts); and the length is the request's
 * Content-Length, so a source that sends more or fewer bytes than it
 * announced fails the request and stores nothing. A failed request is
 * not retried (the SDK never retries a streamed body); the backup fails
 * and its next run starts again.
 *
 * Memory: chunks are borrowed, so each is copied into one of `STAGES`
 * staging buffers of `STAGE_BYTES`, written to the request once full, and
 * filled again only once the request says it was flushed to the socket
 * (the write's callback); the source waits while all are being written.
 * That needs the request itself, which the SDK hands to the body's `pipe`
 * (node-http-handler); a body read any other way fails the upload rather
 * than hand over a buffer still being filled.
 */
import type { Socket } from 'node:net';
import { Readable, type Writable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { ABORT_TIMEOUT_MS, type MultipartTarget, type ObjectWriter } from './multipart-upload.js';
import { s3Sdk } from './s3-sdk.js';

/** S3's largest PutObject: a longer object goes up in parts. */
export const MAX_PUT_BYTES = 5 * 1024 * 1024 * 1024;

const STAGE_BYTES = 512 * 1024;
const STAGES = 4;

export class StreamedPutError extends Error {}

/**
 * The PutObject's body: staging buffers written to the request the SDK
 * pipes it into, each with a callback when flushed. Nothing is ever pushed
 * through the Readable itself.
 */
class StagedBody extends Readable {
  private request?: Writable;
  private readonly queued: { bytes: Buffer; flushed: () => void }[] = [];
  private ended = false;
  private abandoned?: Error;

  constructor(private readonly describe: string) {
    super();
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T): T {
    this.request = destination as unknown as Writable;
    if (this.abandoned) {
      this.request.destroy(this.abandoned);
      return destination;
    }
    for (const { bytes, flushed } of this.queued.splice(0)) this.request.write(bytes, flushed);
    if (this.ended) this.request.end();
    return destination;
  }

  override _read(): void {
    this.destroy(new StreamedPutError(`${this.describe}: the HTTP client read the body instead of piping it (a change in the AWS SDK); nothing was sent`));
  }

  /** Writes `bytes`; `flushed` once the request is done with them (or failed). */
  send(bytes: Buffer, flushed: () => void): void {
    if (this.request) this.request.write(bytes, flushed);
    else this.queued.push({ bytes, flushed });
  }

  finish(): void {
    this.ended = true;
    this.request?.end();
  }

  get wasAbandoned(): boolean {
    return this.abandoned !== undefined;
  }

  /**
   * Cuts the request off short of its length, or keeps it from starting. By a reset: a server that reads a
   * connection closed cleanly part-way may keep what came (versitygw does); a reset it drops.
   */
  abandon(error: Error): void {
    this.abandoned = error;
    const socket = (this.request as { socket?: Socket | null } | undefined)?.socket;
    if (socket && !socket.destroyed) socket.resetAndDestroy();
    this.request?.destroy(error);
    // Not with the error: no one listens to this stream's events, the request's failure is the upload's.
    this.destroy();
  }
}

/** Starts the PutObject of `length` bytes; the body is what is written, and must be exactly that long. */
export function startStreamedPut(connecting: Promise<S3Client>, target: MultipartTarget, length: number, signal?: AbortSignal): ObjectWriter {
  const { bucket, key, contentType } = target;
  const where = `s3://${bucket}/${key}`;
  const body = new StagedBody(where);
  let failure: { error: unknown } | undefined;
  const free: Buffer[] = [];
  let allocated = 0;
  let waiting: (() => void) | undefined;
  const wake = () => {
    const next = waiting;
    waiting = undefined;
    next?.();
  };
  const sending = Promise.all([connecting, s3Sdk()]).then(async ([client, sdk]) => {
    try {
      return await client.send(new sdk.PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: length, ContentType: contentType }), { abortSignal: signal });
    } catch (e) {
      // A store that refuses a request whose body is still coming may answer and reset the connection at once, and the
      // reset can discard the answer (versitygw does, for a bucket that does not exist): then the store is asked why.
      if (body.wasAbandoned || signal?.aborted) throw e;
      // The store's own answer arrived: say its code with its words (the SDK's message alone drops the code, NoSuchBucket say).
      if ((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== undefined) {
        throw new StreamedPutError(`${where}: the store refused the upload: ${(e as Error).name}: ${(e as Error).message}`, { cause: e });
      }
      const why = await client.send(new sdk.ListObjectsV2Command({ Bucket: bucket, Prefix: key, MaxKeys: 1 }), { abortSignal: AbortSignal.timeout(ABORT_TIMEOUT_MS) })
        .then(() => undefined, (refusal: Error) => refusal);
      if (!why) throw e;
      throw new StreamedPutError(`${where}: the store cut the upload off (${(e as Error).message}); asked why, it answers ${why.name}: ${why.message}`, { cause: why });
    }
  });
  // The request's failure ends the writing: the next write throws it, and a source waiting for a buffer is let go.
  sending.catch((e: unknown) => {
    failure ??= { error: e };
    wake();
  });
  const throwIfFailed = () => {
    if (failure) throw failure.error;
  };
  const take = (): Buffer | undefined => {
    const buffer = free.pop();
    if (buffer) return buffer;
    if (allocated >= STAGES) return undefined;
    allocated += 1;
    return Buffer.allocUnsafeSlow(STAGE_BYTES);
  };
  const send = (buffer: Buffer, bytes: number) => body.send(bytes === buffer.length ? buffer : buffer.subarray(0, bytes), () => {
    free.push(buffer);
    wake();
  });
  let stage: Buffer | undefined;
  let filled = 0;
  let written = 0;
  const copy = (chunk: Buffer, offset: number): Promise<void> | undefined => {
    while (offset < chunk.length) {
      throwIfFailed();
      stage ??= take();
      if (!stage) return new Promise<void>((resolve) => (waiting = resolve)).then(() => copy(chunk, offset));
      const copied = chunk.copy(stage, filled, offset);
      filled += copied;
      offset += copied;
      if (filled === STAGE_BYTES) {
        send(stage, filled);
        stage = undefined;
        filled = 0;
      }
    }
    return undefined;
  };
  return {
    write(chunk) {
      throwIfFailed();
      written += chunk.length;
      if (written > length) throw new StreamedPutError(`${where}: the source sent more than the ${length} bytes it announced`);
      return copy(chunk, 0);
    },
    async finish() {
      throwIfFailed();
      if (written !== length) throw new StreamedPutError(`${where}: the source ended after ${written} of the ${length} bytes it announced`);
      if (stage && filled > 0) send(stage, filled);
      stage = undefined;
      body.finish();
      await sending;
      return { parts: 1 };
    },
    async fail() {
      // The request ends short of its Content-Length, which S3 refuses: nothing is stored.
      body.abandon(new StreamedPutError(`${where}: the upload was abandoned`));
      await sending.catch(() => undefined);
    },
  };
}
