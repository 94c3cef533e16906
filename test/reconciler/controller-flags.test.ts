/**
 * dkv controller's flags: a value that would silently change behaviour is a
 * usage error naming the flag, never a quiet default.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { packageRoot } from '../../api/package-root.js';
import { parseControllerFlags } from '../../reconciler/process/controller-flags.js';

describe('dkv controller flags', () => {
  it('takes the documented defaults', () => {
    expect(parseControllerFlags([])).toMatchObject({ workers: 4, resyncMs: 600_000, leaderElect: true, healthHost: '0.0.0.0', healthPort: 8080, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    expect(parseControllerFlags(['--leader-elect', 'false', '--health-addr', '[::1]:0', '--resync-minutes', '0.5'])).toMatchObject({ leaderElect: false, healthHost: '[::1]', healthPort: 0, resyncMs: 30_000 });
  });

  it('serves the conversion webhook on every interface at the configuration\'s port unless told where, or off, and migrates storage unless told not to', () => {
    expect(parseControllerFlags([])).toMatchObject({ webhook: { host: '0.0.0.0' }, migrateStorage: true });
    expect(parseControllerFlags(['--webhook-addr', '127.0.0.1:0', '--migrate-storage', 'false'])).toMatchObject({ webhook: { host: '127.0.0.1', port: 0 }, migrateStorage: false });
    expect(parseControllerFlags(['--webhook-addr', 'off'])).toMatchObject({ webhook: null });
  });

  it('runs in fleet mode with a coordination kubeconfig and this cluster\'s name, and alone otherwise', () => {
    expect(parseControllerFlags([]).fleet).toBeUndefined();
    expect(parseControllerFlags(['--fleet-kubeconfig', '/etc/fleet/kubeconfig', '--fleet-member', 'eu-west']).fleet).toEqual({ kubeconfig: '/etc/fleet/kubeconfig', member: 'eu-west' });
  });

  it('runs one leader by default and sharded replicas with --shards auto', () => {
    expect(parseControllerFlags([]).shards).toBe(false);
    expect(parseControllerFlags(['--shards', 'off']).shards).toBe(false);
    expect(parseControllerFlags(['--shards', 'auto']).shards).toBe(true);
  });

  it.each([
    [['--shards', '3'], '--shards: must be off or auto (got "3")'],
    [['--shards', 'auto', '--fleet-kubeconfig', 'k', '--fleet-member', 'eu-west'], '--shards: cannot be combined with fleet mode (--fleet-kubeconfig) yet (got "auto")'],
    [['--leader-elect', 'yes'], '--leader-elect: must be true or false (got "yes")'],
    [['--leader-elect', 'True'], '--leader-elect: must be true or false (got "True")'],
    [['--resync-minutes', '0'], '--resync-minutes: must be a number greater than 0 (got "0")'],
    [['--workers', '0'], '--workers: must be an integer at least 1 (got "0")'],
    [['--workers', '2.5'], '--workers: must be an integer at least 1 (got "2.5")'],
    [['--lease-duration-ms', ''], '--lease-duration-ms: must be an integer at least 1 (got "")'],
    [['--health-addr', 'localhost'], '--health-addr: must be <host>:<port> (got "localhost")'],
    [['--webhook-addr', '9443'], '--webhook-addr: must be <host>:<port> or off (got "9443")'],
    [['--migrate-storage', 'no'], '--migrate-storage: must be true or false (got "no")'],
    [['--fleet-kubeconfig', '/etc/fleet/kubeconfig'], '--fleet-member: is required with --fleet-kubeconfig'],
    [['--fleet-member', 'eu-west'], '--fleet-kubeconfig: is required with --fleet-member'],
    [['--fleet-kubeconfig', 'k', '--fleet-member', 'EU West'], '--fleet-member: must be a DNS-1123 subdomain (got "EU West")'],
  ])('rejects %j', (args, message) => {
    expect(() => parseControllerFlags(args)).toThrow(message);
  });

  it('makes dkv exit 2 with the flag named, before touching any cluster', () => {
    const result = spawnSync(process.execPath, [join(packageRoot(), 'bin', 'dkv.js'), 'controller', '--leader-elect', 'yes', '--kubeconfig', '/nonexistent'], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('--leader-elect: must be true or false (got "yes")');
  });
});
