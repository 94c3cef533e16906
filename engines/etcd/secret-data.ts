/**
 * How the controller carries a TLS Secret's values: as strings, PEM text
 * (UTF-8) for every key but the DER ones (the members' CRL, `crl.der`),
 * which are binary and travel as latin1 strings, one character per byte, so
 * that decoding and encoding again gives the same bytes.
 */
const binary = (key: string): boolean => key.endsWith('.der');

/** A Secret's `data` value (base64) for this key and string. */
export const encodeSecretValue = (key: string, value: string): string => Buffer.from(value, binary(key) ? 'latin1' : 'utf8').toString('base64');

/** The string a Secret's `data` value (base64) carries for this key. */
export const decodeSecretValue = (key: string, base64: string): string => Buffer.from(base64, 'base64').toString(binary(key) ? 'latin1' : 'utf8');

/** A Secret's data, decoded. */
export const decodeSecretData = (data: Readonly<Record<string, string>> | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, decodeSecretValue(k, v)]));

/** The bytes of a decoded value, as a file of the mounted Secret holds them. */
export const secretValueBytes = (key: string, value: string): Buffer => Buffer.from(value, binary(key) ? 'latin1' : 'utf8');
