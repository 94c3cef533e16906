import { createLogger, silentLogger } from '../../kube/log.js';

function capture(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger(level, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { log, lines };
}

describe('the controller logger', () => {
  it('writes one JSON line per event: the message, its fields and the component', () => {
    const { log, lines } = capture('info');
    log.warn('watch failed', { kind: 'Service', retryInMs: 1000 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'watch failed', kind: 'Service', retryInMs: 1000, component: 'dkv-controller', level: 40 });
    expect(typeof lines[0].time).toBe('string');
  });

  it('gives a child’s fields to every later line, beside the line’s own', () => {
    const { log, lines } = capture('info');
    const leaseLog = log.child({ lease: 'ns/dkv-controller', identity: 'a' });
    leaseLog.info('leader.started');
    leaseLog.info('leader.stopped', { reason: 'renew failed' });
    expect(lines).toEqual([
      expect.objectContaining({ msg: 'leader.started', lease: 'ns/dkv-controller', identity: 'a' }),
      expect.objectContaining({ msg: 'leader.stopped', lease: 'ns/dkv-controller', identity: 'a', reason: 'renew failed' }),
    ]);
  });

  it('drops lines below its level', () => {
    const { log, lines } = capture('warn');
    log.debug('reconciled', { key: 'ns/a' });
    log.info('applied', { key: 'ns/a' });
    log.error('apply failed', { key: 'ns/a' });
    expect(lines.map((l) => l.msg)).toEqual(['apply failed']);
  });

  it('has a silent logger whose children are silent too', () => {
    expect(silentLogger.child({ a: 1 })).toBe(silentLogger);
    expect(() => silentLogger.child({}).error('x', { y: 1 })).not.toThrow();
  });
});
