/**
 * The backup's upload (backup/multipart-upload.ts through ObjectStore.upload)
 * against a real S3-compatible server (versitygw): what arrives is what was
 * sent, byte for byte, with the sha256 the manifest will record; no more
 * parts are in flight than the store has part buffers (its memory bound); and an upload that fails leaves
 * neither an object nor a multipart upload behind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, S3Client, type ServiceInputTypes, type ServiceOutputTypes } from '@aws-sdk/client-s3';
import type { Command } from '@smithy/types';
import { ObjectStore } from '../../backup/object-store.js';
import type { ByteSource } from '../../backup/multipart-upload.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';

const describeWithS3 = process.env.DKV_SKIP_CLUSTER ? describe.skip : describe;
const MiB = 1024 * 1024;

/** `data` pushed in chunks of `chunkBytes`, waiting whenever the sink asks to. */
const sourceOf = (data: Buffer, chunkBytes: number, failAt?: number): ByteSource => async (sink) => {
  for (let at = 0; at < data.length; at += chunkBytes) {
    if (failAt !== undefined && at >= failAt) throw new Error('the member went away');
    const pending = sink(data.subarray(at, at + chunkBytes));
    if (pending) await pending;
  }
};

describeWithS3('uploading a snapshot in parts', () => {
  let s3: S3Server;
  let client: S3Client;
  /** Every command sent, and the most UploadPart requests that were in flight at once. */
  let sent: string[];
  let inFlight = 0;
  let mostInFlight = 0;
  /** The part the store refuses, if any. */
  let refusePart: number | undefined;

  beforeAll(async () => {
    s3 = await startS3Server();
    client = new S3Client({
      endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY },
      requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const send = client.send.bind(client) as (command: Command<ServiceInputTypes, object, ServiceOutputTypes, ServiceOutputTypes, unknown>, options?: object) => Promise<ServiceOutputTypes>;
    (client as { send: unknown }).send = async (command: Command<ServiceInputTypes, object, ServiceOutputTypes, ServiceOutputTypes, unknown>, options?: object) => {
      const name = command.constructor.name;
      sent.push(name);
      if (name !== 'UploadPartCommand') return send(command, options);
      if ((command.input as { PartNumber?: number }).PartNumber === refusePart) throw new Error(`SlowDown: part ${refusePart} refused`);
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      try {
        return await send(command, options);
      } finally {
        inFlight -= 1;
      }
    };
  }, 120_000);
  beforeEach(() => {
    sent = [];
    mostInFlight = 0;
    refusePart = undefined;
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.stop();
  });

  const body = async (key: string): Promise<Buffer> =>
    Buffer.from(await (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body!.transformToByteArray());
  const openUploads = async () => (await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }))).Uploads ?? [];

  it('stores exactly the bytes sent, in parts of the configured size, never more parts in flight than its two part buffers, and returns their size and sha256', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    // Not a whole number of parts, in chunks that straddle the parts' edges.
    const data = randomBytes(4 * 5 * MiB + 12_345);
    const result = await store.upload('parts/snapshot.db', sourceOf(data, 33_333));
    expect(result).toEqual({ bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') });
    expect(sent.filter((c) => c === 'UploadPartCommand')).toHaveLength(5);
    expect(sent.filter((c) => c !== 'UploadPartCommand')).toEqual(['CreateMultipartUploadCommand', 'CompleteMultipartUploadCommand']);
    expect(mostInFlight).toBeGreaterThanOrEqual(1);
    expect(mostInFlight).toBeLessThanOrEqual(2);
    expect((await body('parts/snapshot.db')).equals(data)).toBe(true);
    expect(await openUploads()).toEqual([]);
  }, 120_000);

  it('sends a source of exactly one part as one object, and an exact multiple of the part size without an empty last part', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    const one = randomBytes(5 * MiB);
    await store.upload('one/snapshot.db', sourceOf(one, 65_536));
    expect(sent).toEqual(['PutObjectCommand']);
    expect((await body('one/snapshot.db')).equals(one)).toBe(true);
    sent = [];
    const two = randomBytes(2 * 5 * MiB);
    await store.upload('two/snapshot.db', sourceOf(two, 65_536));
    expect(sent.filter((c) => c === 'UploadPartCommand')).toHaveLength(2);
    expect((await body('two/snapshot.db')).equals(two)).toBe(true);
  }, 120_000);

  it('aborts the multipart upload when the source fails part-way: no object, no parts left to pay for', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    const data = randomBytes(3 * 5 * MiB);
    await expect(store.upload('failed/snapshot.db', sourceOf(data, 65_536, 2 * 5 * MiB + 1))).rejects.toThrow('the member went away');
    expect(sent).toContain('AbortMultipartUploadCommand');
    expect(await openUploads()).toEqual([]);
    await expect(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'failed/snapshot.db' }))).rejects.toMatchObject({ name: 'NotFound' });
  }, 120_000);

  it('aborts the multipart upload when the store refuses a part, stops reading, and reports the store\'s error', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    const data = randomBytes(6 * 5 * MiB);
    refusePart = 2;
    let read = 0;
    const counting: ByteSource = (sink) => sourceOf(data, 65_536)((chunk) => {
      read += chunk.length;
      return sink(chunk);
    });
    await expect(store.upload('refused/snapshot.db', counting)).rejects.toThrow('SlowDown: part 2 refused');
    expect(sent).toContain('AbortMultipartUploadCommand');
    expect(sent).not.toContain('CompleteMultipartUploadCommand');
    // Reading stopped within the parts that were being sent or filled when the refusal came.
    expect(read).toBeLessThan(data.length);
    expect(await openUploads()).toEqual([]);
    await expect(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: 'refused/snapshot.db' }))).rejects.toMatchObject({ name: 'NotFound' });
  }, 120_000);
});
