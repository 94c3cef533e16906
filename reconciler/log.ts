import { pino, type Logger as PinoLogger } from 'pino';

export type Logger = PinoLogger;

/** Structured JSON logs, one event per line, to stdout. Every reconcile line carries the object key. */
export function createLogger(level = process.env.DKV_LOG_LEVEL ?? 'info'): Logger {
  return pino({ level, base: { component: 'dkv-controller' }, timestamp: pino.stdTimeFunctions.isoTime });
}
