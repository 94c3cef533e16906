import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';

/** Structured fields of one log line. */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * The one logging interface of the controller and its machinery (informer,
 * leader election, Event recorder, reconcile), as logr is for
 * controller-runtime: a message, then fields; `child` adds fields every later
 * line carries (the Lease, the object key). Modules depend on this, not on
 * pino, so tests pass a recording logger and the machinery defaults to
 * `silentLogger`.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Writes nothing: the default where a caller gives no logger. */
export const silentLogger: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  child: () => silentLogger,
};

/** Structured JSON logs through pino, one event per line, to stdout unless told otherwise. */
export function createLogger(level = process.env.DKV_LOG_LEVEL ?? 'info', destination?: DestinationStream, component = 'dkv-controller'): Logger {
  const options = { level, base: { component }, timestamp: pino.stdTimeFunctions.isoTime };
  return fromPino(destination ? pino(options, destination) : pino(options));
}

/** pino takes fields first; everything here passes the message first, so the order is swapped in one place. */
function fromPino(p: PinoLogger): Logger {
  return {
    debug: (message, fields) => p.debug(fields ?? {}, message),
    info: (message, fields) => p.info(fields ?? {}, message),
    warn: (message, fields) => p.warn(fields ?? {}, message),
    error: (message, fields) => p.error(fields ?? {}, message),
    child: (fields) => fromPino(p.child(fields)),
  };
}
