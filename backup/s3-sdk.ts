/**
 * `@aws-sdk/client-s3`, loaded on first use rather than with the module that
 * names it: evaluating the SDK is the largest part of `dkv backup`'s start
 * (about 100 ms), and loaded once the snapshot stream is asked for, it is
 * evaluated while the member begins to stream (the socket holds what comes
 * meanwhile) instead of before anything else happens.
 */
export type S3Sdk = typeof import('@aws-sdk/client-s3');

let loading: Promise<S3Sdk> | undefined;

export function s3Sdk(): Promise<S3Sdk> {
  loading ??= import('@aws-sdk/client-s3');
  return loading;
}
