/**
 * One object uploaded from a stream of chunks whose length is not known
 * before the first (or is more than one PutObject takes: streamed-put.ts
 * sends the others), as S3
 * multipart parts cut from a fixed pool of `partBuffers` part buffers: the
 * part being filled and the ones being sent, so memory is
 * `partBuffers * partSize` however large the object, and reading waits
 * (the source is back-pressured) only while every buffer is being sent.
 *
 * It replaces `@aws-sdk/lib-storage`'s `Upload`, whose chunker concatenates
 * every part into a freshly allocated buffer and keeps the tail of the
 * previous one alive: for a 109 MiB etcd snapshot that was a quarter of a
 * second of copying into new pages, a third of a second of garbage
 * collection, and a peak RSS near 300 MiB (`npm run bench:backup`). Here a
 * buffer is written once, sent, and filled again.
 *
 * What the store checks is unchanged: every part is sent with its sha256 in
 * its signature (SigV4 over a buffer signs the payload, so the store
 * refuses a part that arrived altered), and an upload that fails or is
 * aborted is aborted in the store too, leaving no parts to pay for. An
 * object that fits in one part is one PutObject, as lib-storage did.
 */
import type { CompletedPart, S3Client } from '@aws-sdk/client-s3';
import { s3Sdk, type S3Sdk } from './s3-sdk.js';

export interface MultipartTarget {
  readonly bucket: string;
  readonly key: string;
  readonly contentType: string;
}

export interface MultipartOptions {
  /** Bytes per part (S3: at least 5 MiB, except the last). */
  readonly partSize: number;
  /** Part buffers: the one filling and those being sent (all of them while reading waits). */
  readonly partBuffers: number;
  readonly signal?: AbortSignal;
}

/** How long aborting a failed upload may take before the failure is reported anyway. */
export const ABORT_TIMEOUT_MS = 10_000;

/** S3's limit on the parts of one object. */
const MAX_PARTS = 10_000;

/**
 * Bytes pushed into a sink, each chunk borrowed until the sink returns or its promise settles (engines/etcd/snapshot.ts
 * streamEtcdSnapshot); `onLength`, when the source knows it, is told the whole length before the first chunk.
 */
export type ByteSource = (sink: (chunk: Buffer) => void | Promise<void>, onLength?: (bytes: number) => void) => Promise<void>;

/** One object being written, chunk by chunk. */
export interface ObjectWriter {
  /** Takes a borrowed chunk; a promise when the next must wait for it. Throws once the upload failed. */
  write(chunk: Buffer): Promise<void> | undefined;
  /** Every chunk was written: the object is stored once this resolves. */
  finish(): Promise<{ readonly parts: number }>;
  /** The source failed: whatever was started is abandoned in the store too (best effort). */
  fail(): Promise<void>;
}

/** `connecting`: the client, which the first part waits for (s3-sdk.ts says why it may still be loading). */
export function startMultipart(connecting: Promise<S3Client>, target: MultipartTarget, options: MultipartOptions): ObjectWriter {
  // Parts go out only once both are there; a failure to load either is the upload's failure, reported by the first that needs them.
  let s3: { client: S3Client; sdk: S3Sdk } | undefined;
  const ready = Promise.all([connecting, s3Sdk()]).then(([client, sdk]) => (s3 = { client, sdk }));
  ready.catch(() => undefined);
  const { partSize, partBuffers, signal } = options;
  const { bucket, key, contentType } = target;
  const free: Buffer[] = [];
  let allocated = 0;
  const waiting: ((buffer: Buffer) => void)[] = [];
  const release = (buffer: Buffer) => {
    const next = waiting.shift();
    if (next) next(buffer);
    else free.push(buffer);
  };
  /** A free part buffer now, or undefined when all are being sent. */
  const takeNow = (): Buffer | undefined => {
    const buffer = free.pop();
    if (buffer) return buffer;
    if (allocated >= partBuffers) return undefined;
    allocated += 1;
    // Not zeroed: a part is sent up to its fill, every byte of it written first.
    return Buffer.allocUnsafeSlow(partSize);
  };

  let uploadId: string | undefined;
  const completed: CompletedPart[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  const throwIfFailed = () => {
    if (failure) throw failure.error;
  };
  const send = async (buffer: Buffer, length: number, partNumber: number) => {
    try {
      const { client, sdk } = s3!;
      const answer = await client.send(new sdk.UploadPartCommand({
        Bucket: bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: buffer.subarray(0, length), ContentLength: length,
      }), { abortSignal: signal });
      completed.push({ PartNumber: partNumber, ETag: answer.ETag });
    } catch (e) {
      failure ??= { error: e };
    } finally {
      release(buffer);
    }
  };
  const sendPart = (buffer: Buffer, length: number, partNumber: number) => {
    const sending = send(buffer, length, partNumber);
    inFlight.add(sending);
    void sending.finally(() => inFlight.delete(sending));
  };
  /** Sends a part; a promise only while the upload itself is being created (the first part). */
  const startPart = (buffer: Buffer, length: number, partNumber: number): Promise<void> | undefined => {
    if (partNumber > MAX_PARTS) throw new Error(`s3://${bucket}/${key}: more than ${MAX_PARTS} parts of ${partSize} bytes; a larger part size is needed`);
    if (uploadId !== undefined) {
      sendPart(buffer, length, partNumber);
      return undefined;
    }
    return ready.then(({ client, sdk }) => client.send(new sdk.CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: contentType }), { abortSignal: signal })).then((created) => {
      uploadId = created.UploadId;
      sendPart(buffer, length, partNumber);
    });
  };

  let part: Buffer | undefined;
  let filled = 0;
  let partNumber = 1;
  /** Copies `chunk` from `offset` into parts, sending each full one; a promise when it must wait for a free buffer. */
  const copy = (chunk: Buffer, offset: number): Promise<void> | undefined => {
    while (offset < chunk.length) {
      throwIfFailed();
      if (!part) {
        part = takeNow();
        filled = 0;
        if (!part) return new Promise<Buffer>((resolve) => waiting.push(resolve)).then((buffer) => {
          part = buffer;
          return copy(chunk, offset);
        });
      }
      // A full part is sent only once more bytes come: the last part is never empty.
      if (filled === partSize) {
        const full = part;
        part = undefined;
        const starting = startPart(full, partSize, partNumber++);
        if (starting) return starting.then(() => copy(chunk, offset));
        continue;
      }
      const copied = chunk.copy(part, filled, offset);
      filled += copied;
      offset += copied;
    }
    return undefined;
  };

  return {
    write: (chunk) => copy(chunk, 0),
    async finish() {
      throwIfFailed();
      if (uploadId === undefined) {
        const body = part ? part.subarray(0, filled) : Buffer.alloc(0);
        const { client, sdk } = await ready;
        await client.send(new sdk.PutObjectCommand({ Bucket: bucket, Key: key, Body: body, ContentLength: body.length, ContentType: contentType }), { abortSignal: signal });
        return { parts: 1 };
      }
      if (part && filled > 0) await startPart(part, filled, partNumber);
      await Promise.all(inFlight);
      throwIfFailed();
      completed.sort((a, b) => a.PartNumber! - b.PartNumber!);
      const { client, sdk } = s3!;
      await client.send(new sdk.CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: completed } }), { abortSignal: signal });
      return { parts: completed.length };
    },
    async fail() {
      await Promise.allSettled(inFlight);
      if (uploadId !== undefined && s3) {
        const { client, sdk } = s3;
        // Best effort, and not under the signal that may have ended the upload (a deadline): under a bound of its own.
        await client.send(new sdk.AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }), { abortSignal: AbortSignal.timeout(ABORT_TIMEOUT_MS) }).catch(() => undefined);
      }
    },
  };
}
