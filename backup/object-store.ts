/**
 * The S3 calls a backup makes, over `@aws-sdk/client-s3` (credentials from
 * the SDK's default chain: AWS_* environment variables, a web identity token
 * for IRSA, the instance role); a snapshot goes up in parts from a fixed
 * pool of buffers (multipart-upload.ts), so memory is bounded however large
 * it is.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, NoSuchKey, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { GeneratorConfig } from '../model/generator-config.js';
import type { BackupFile } from './manifest.js';
import { uploadMultipart, type ByteSource } from './multipart-upload.js';
import { backupFileOf, MANIFEST_FILE } from './s3-location.js';
import type { StoredBackup } from './retention.js';

/** Static credentials, for a caller that holds them (a test); everything else uses the default chain. */
export interface S3Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/**
 * Part buffers: one filling while two are sent (three when reading waits),
 * as lib-storage's queue of two was, so a store slower per request than the
 * member's stream still keeps up; with 8 MiB parts, at most 24 MiB.
 */
const PART_BUFFERS = 3;

export class ObjectStore {
  private readonly partSize: number;

  constructor(private readonly client: S3Client, readonly bucket: string, partSizeMiB: number, private readonly partBuffers = PART_BUFFERS) {
    this.partSize = partSizeMiB * 1024 * 1024;
  }

  /** A store as the configuration describes it; credentials from the SDK's default chain unless given. */
  static fromConfig(bucket: string, config: GeneratorConfig['backup']['s3'], credentials?: S3Credentials): ObjectStore {
    const client = new S3Client({
      credentials,
      region: config.region,
      endpoint: config.endpoint || undefined,
      forcePathStyle: config.forcePathStyle,
      // Only where S3 requires one: S3-compatible stores differ in which of the newer checksums they accept.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    return new ObjectStore(client, bucket, config.partSizeMiB);
  }

  /** Uploads a stream of chunks as one object (multipart-upload.ts), returning its size and sha256. */
  async upload(key: string, source: ByteSource, signal?: AbortSignal): Promise<Omit<BackupFile, 'name'>> {
    const hash = createHash('sha256');
    let bytes = 0;
    await uploadMultipart(this.client, { bucket: this.bucket, key, contentType: 'application/octet-stream' }, source, {
      partSize: this.partSize, partBuffers: this.partBuffers, signal,
      onChunk: (chunk) => {
        hash.update(chunk);
        bytes += chunk.length;
      },
    });
    return { bytes, sha256: hash.digest('hex') };
  }

  async putText(key: string, body: string, contentType: string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: body, ContentType: contentType }));
  }

  async putJson(key: string, value: unknown): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: JSON.stringify(value, null, 2) + '\n', ContentType: 'application/json' }));
  }

  /** A JSON object, or undefined when there is no object under that key. */
  async getJson(key: string): Promise<unknown> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return JSON.parse(await object.Body!.transformToString()) as unknown;
    } catch (e) {
      if (e instanceof NoSuchKey || (e as { name?: string }).name === 'NoSuchKey') return undefined;
      throw e;
    }
  }

  /** Streams an object into a file (never whole in memory), returning its size and sha256. */
  async download(key: string, file: string, signal?: AbortSignal): Promise<Omit<BackupFile, 'name'>> {
    const object = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal });
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
      await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true } }));
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
    this.client.destroy();
  }

  private async *keys(prefix: string): AsyncGenerator<string> {
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) if (object.Key) yield object.Key;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }
}

