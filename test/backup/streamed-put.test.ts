/**
 * The backup's upload of a source that announces its length (an etcd
 * snapshot: engines/etcd/snapshot.ts) against a real S3-compatible server
 * (versitygw): one PutObject streamed as the chunks come, byte for byte
 * what was sent, with the sha256 the manifest will record; a source that
 * sends more or fewer bytes than it announced, or fails part-way, or a
 * store that refuses the request, stores nothing; and a length S3 takes
 * only in parts goes up in parts.
 */
import { createHash, randomBytes } from 'node:crypto';
import { GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, S3Client, type ServiceInputTypes, type ServiceOutputTypes } from '@aws-sdk/client-s3';
import type { Command } from '@smithy/types';
import { ObjectStore } from '../../backup/object-store.js';
import type { ByteSource } from '../../backup/multipart-upload.js';
import { MAX_PUT_BYTES } from '../../backup/streamed-put.js';
import { S3_ACCESS_KEY, S3_SECRET_KEY, startS3Server, type S3Server } from '../support/s3-server.js';

const describeWithS3 = process.env.DKV_SKIP_CLUSTER ? describe.skip : describe;
const MiB = 1024 * 1024;

/**
 * `data` announced as `length` bytes (its own by default), then pushed in chunks of `chunkBytes` from one reused
 * buffer (as the snapshot reader lends them), waiting a moment now and then as a member's stream does.
 */
const announcing = (data: Buffer, chunkBytes: number, options: { length?: number; failAt?: number } = {}): ByteSource => async (sink, onLength) => {
  onLength?.(options.length ?? data.length);
  const lent = Buffer.alloc(chunkBytes);
  for (let at = 0, n = 0; at < data.length; at += chunkBytes, n++) {
    if (options.failAt !== undefined && at >= options.failAt) throw new Error('the member went away');
    const chunk = lent.subarray(0, data.copy(lent, 0, at, at + chunkBytes));
    const pending = sink(chunk);
    if (pending) await pending;
    // Overwritten at once: a byte the upload had not yet copied or flushed would arrive altered.
    lent.fill(0xee);
    if (n % 97 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  }
};

describeWithS3('uploading a snapshot whose length is announced', () => {
  let s3: S3Server;
  let client: S3Client;
  let sent: string[];

  beforeAll(async () => {
    s3 = await startS3Server();
    client = new S3Client({
      endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: S3_ACCESS_KEY, secretAccessKey: S3_SECRET_KEY },
      requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED',
    });
    const send = client.send.bind(client) as (command: Command<ServiceInputTypes, object, ServiceOutputTypes, ServiceOutputTypes, unknown>, options?: object) => Promise<ServiceOutputTypes>;
    (client as { send: unknown }).send = (command: Command<ServiceInputTypes, object, ServiceOutputTypes, ServiceOutputTypes, unknown>, options?: object) => {
      sent.push(command.constructor.name);
      return send(command, options);
    };
  }, 120_000);
  beforeEach(() => {
    sent = [];
  });
  afterAll(async () => {
    client?.destroy();
    await s3?.stop();
  });

  const body = async (key: string): Promise<Buffer> =>
    Buffer.from(await (await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))).Body!.transformToByteArray());
  const absent = async (key: string) => {
    await expect(client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }))).rejects.toMatchObject({ name: 'NotFound' });
    expect((await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket }))).Uploads ?? []).toEqual([]);
  };

  it('stores exactly the bytes sent as one PutObject, from chunks lent one at a time, and returns their size and sha256', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    // Longer than the 5 MiB parts would be, not a whole number of staging buffers, in chunks that straddle their edges.
    const data = randomBytes(17 * MiB + 12_345);
    const result = await store.upload('streamed/snapshot.db', announcing(data, 32_768 + 7));
    expect(result).toEqual({ bytes: data.length, sha256: createHash('sha256').update(data).digest('hex') });
    expect(sent).toEqual(['PutObjectCommand']);
    expect((await body('streamed/snapshot.db')).equals(data)).toBe(true);
  }, 120_000);

  it('stores nothing when the source sends fewer or more bytes than it announced', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    const data = randomBytes(3 * MiB);
    await expect(store.upload('short/snapshot.db', announcing(data, 65_536, { length: data.length + 32 }))).rejects.toThrow(`the source sent ${data.length} of the ${data.length + 32} bytes it announced`);
    await absent('short/snapshot.db');
    await expect(store.upload('long/snapshot.db', announcing(data, 65_536, { length: data.length - 1 }))).rejects.toThrow(`more than the ${data.length - 1} bytes it announced`);
    await absent('long/snapshot.db');
  }, 120_000);

  it('stores nothing when the source fails part-way, and reports the source\'s error', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    const data = randomBytes(6 * MiB);
    await expect(store.upload('failed/snapshot.db', announcing(data, 65_536, { failAt: 4 * MiB }))).rejects.toThrow('the member went away');
    await absent('failed/snapshot.db');
  }, 120_000);

  it('reports the store\'s refusal, even where the store resets the connection as it refuses, and stops reading the source', async () => {
    const store = new ObjectStore(client, 'no-such-bucket', 5);
    const data = randomBytes(64 * MiB);
    let read = 0;
    const source = announcing(data, 65_536);
    const counting: ByteSource = (sink, onLength) => source((chunk) => {
      read += chunk.length;
      return sink(chunk);
    }, onLength);
    await expect(store.upload('refused/snapshot.db', counting)).rejects.toThrow(/NoSuchBucket/);
    expect(read).toBeLessThan(data.length);
  }, 120_000);

  it('sends in parts a length S3 takes only in parts (over 5 GiB), and holds it to the length announced', async () => {
    const store = new ObjectStore(client, s3.bucket, 5);
    const data = randomBytes(11 * MiB);
    await expect(store.upload('large/snapshot.db', announcing(data, 65_536, { length: MAX_PUT_BYTES + 1 }))).rejects.toThrow(`the source sent ${data.length} of the ${MAX_PUT_BYTES + 1} bytes it announced`);
    expect(sent).toContain('CreateMultipartUploadCommand');
    expect(sent).toContain('AbortMultipartUploadCommand');
    expect(sent).not.toContain('PutObjectCommand');
    await absent('large/snapshot.db');
  }, 120_000);
});
