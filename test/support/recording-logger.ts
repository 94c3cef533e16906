import type { LogFields, Logger, LogLevel } from '../../kube/log.js';

/** One line a `RecordingLogger` kept. */
export interface LogRecord {
  readonly level: LogLevel;
  readonly message: string;
  readonly fields: LogFields;
}

/** Keeps every line in memory, children included, so a test can assert on what was logged. */
export function recordingLogger(records: LogRecord[] = [], base: LogFields = {}): Logger & { readonly records: LogRecord[] } {
  const line = (level: LogLevel) => (message: string, fields?: LogFields) => {
    records.push({ level, message, fields: { ...base, ...fields } });
  };
  return {
    records,
    debug: line('debug'),
    info: line('info'),
    warn: line('warn'),
    error: line('error'),
    child: (fields) => recordingLogger(records, { ...base, ...fields }),
  };
}
