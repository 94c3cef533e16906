/**
 * The S3 calls a backup makes, over `@aws-sdk/client-s3` (credentials from
 * the SDK's default chain: AWS_* environment variables, a web identity token
 * for IRSA, the instance role). A snapshot whose length is known before its
 * first byte, up to S3's 5 GiB, goes up as one streamed PutObject
 * (streamed-put.ts); any other, in parts from a fixed pool of buffers
 * (multipart-upload.ts). Memory is bounded either way, however large it is.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { GeneratorConfig } from '../model/generator-config.js';
import type { BackupFile } from './manifest.js';
import { startMultipart, type ByteSource, type ObjectWriter } from './multipart-upload.js';
import { MAX_PUT_BYTES, startStreamedPut } from './streamed-put.js';
import { s3Sdk, type S3Sdk } from './s3-sdk.js';
import { backupFileOf, MANIFEST_FILE } from './s3-location.js';
import type { StoredBackup } from './retention.js';

/** Static credentials, for a caller that holds them (a test); everything else uses the default chain. */
export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/**
 * Part buffers: one filling while the other is sent (16 MiB with the
 * default 8 MiB parts). A third let two parts go out at once, which the
 * bench's store never needed (a part is sent faster than the member fills
 * the next), for 8 MiB more at the peak: the difference between 124 and
 * 129-134 MiB of RSS for a 1.1 GiB snapshot, against a bound of 128.
 */
const PART_BUFFERS = 2;

export class ObjectStore {
  private readonly partSize: number;
  private connecting?: Promise<S3Client>;
  private connected?: S3Client;

  /** `client`: one made already (a test's), or how to make one when first needed (s3-sdk.ts says why not before). */
  constructor(private readonly client: S3Client | (() => Promise<S3Client>), readonly bucket: string, partSizeMiB: number, private readonly partBuffers = PART_BUFFERS) {
    this.partSize = partSizeMiB * 1024 * 1024;
  }

  /** A store as the configuration describes it; credentials from the SDK's default chain unless given. */
  static fromConfig(bucket: string, config: GeneratorConfig['backup']['s3'], credentials?: S3Credentials): ObjectStore {
    return new ObjectStore(async () => new (await s3Sdk()).S3Client({
      credentials,
      region: config.region,
      endpoint: config.endpoint || undefined,
      forcePathStyle: config.forcePathStyle,
      // Only where S3 requires one: S3-compatible stores differ in which of the newer checksums they accept.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }), bucket, config.partSizeMiB);
  }

  private s3(): Promise<S3Client> {
    this.connecting ??= (typeof this.client === 'function' ? this.client() : Promise.resolve(this.client)).then((c) => (this.connected = c));
    return this.connecting;
  }

  /** The client and the SDK's commands, once both are loaded. */
  private async ready(): Promise<{ client: S3Client; sdk: S3Sdk }> {
    const [client, sdk] = await Promise.all([this.s3(), s3Sdk()]);
    return { client, sdk };
  }

  /**
   * Uploads a stream of chunks as one object, returning its size and
   * sha256: one streamed PutObject when the source announces a length S3
   * takes in one request, else parts.
   */
  async upload(key: string, source: ByteSource, signal?: AbortSignal): Promise<Omit<BackupFile, 'name'>> {
    const hash = createHash('sha256');
    let bytes = 0;
    const target = { bucket: this.bucket, key, contentType: 'application/octet-stream' };
    let announced: number | undefined;
    let writer: ObjectWriter | undefined;
    // Asked for now, the SDK loads while the member begins to stream; the first request waits for it.
    const start = () => announced !== undefined && announced <= MAX_PUT_BYTES
      ? startStreamedPut(this.s3(), target, announced, signal)
      : startMultipart(this.s3(), target, { partSize: this.partSize, partBuffers: this.partBuffers, signal });
    try {
      await source((chunk) => {
        hash.update(chunk);
        bytes += chunk.length;
        writer ??= start();
        return writer.write(chunk);
      }, (length) => {
        if (writer === undefined) announced = length;
      });
      writer ??= start();
      if (announced !== undefined && bytes !== announced) throw new Error(`s3://${this.bucket}/${key}: the source sent ${bytes} of the ${announced} bytes it announced`);
      await writer.finish();
    } catch (e) {
      await writer?.fail();
      throw e;
    }
    return { bytes, sha256: hash.digest('hex') };
  }

  async putText(key: string, body: string, contentType: string): Promise<void> {
    const { client, sdk } = await this.ready();
    await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }));
  }

  async putJson(key: string, value: unknown): Promise<void> {
    const { client, sdk } = await this.ready();
    await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: JSON.stringify(value, null, 2) + '\n', ContentType: 'application/json' }));
  }

  /** A JSON object, or undefined when there is no object under that key. */
  async getJson(key: string): Promise<unknown> {
    try {
      const { client, sdk } = await this.ready();
      const object = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return JSON.parse(await object.Body!.transformToString()) as unknown;
    } catch (e) {
      if ((e as { name?: string }).name === 'NoSuchKey') return undefined;
      throw e;
    }
  }

  /** Streams an object into a file (never whole in memory), returning its size and sha256. */
  async download(key: string, file: string, signal?: AbortSignal): Promise<Omit<BackupFile, 'name'>> {
    const { client, sdk } = await this.ready();
    const object = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal });
    const hash = createHash('sha256');
    let bytes = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    await pipeline(object.Body as Readable, counted, createWriteStream(file), { signal });
    return { bytes, sha256: hash.digest('hex') };
  }

  /** The backups directly in a folder (`<folder><stamp>/<file>`), and whether each has its manifest; deeper keys are not its backups. */
  async listBackups(folder: string): Promise<StoredBackup[]> {
    const stamps = new Map<string, boolean>();
    for await (const key of this.keys(folder)) {
      const backup = backupFileOf(folder, key);
      if (backup) stamps.set(backup.stamp, (stamps.get(backup.stamp) ?? false) || backup.file === MANIFEST_FILE);
    }
    return [...stamps].map(([stamp, complete]) => ({ stamp, folder: `${folder}${stamp}/`, complete }));
  }

  /** Deletes every object under `prefix` (a backup's folder, with its trailing slash). */
  async deleteFolder(prefix: string): Promise<number> {
    let batch: string[] = [];
    let deleted = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const { client, sdk } = await this.ready();
      await client.send(new sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
      deleted += batch.length;
      batch = [];
    };
    for await (const key of this.keys(prefix)) {
      batch.push(key);
      if (batch.length === 1000) await flush();
    }
    await flush();
    return deleted;
  }

  close(): void {
    (typeof this.client === 'function' ? this.connected : this.client)?.destroy();
  }

  private async *keys(prefix: string): AsyncGenerator<string> {
    let token: string | undefined;
    do {
      const { client, sdk } = await this.ready();
      const page = await client.send(new sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) if (object.Key) yield object.Key;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}

