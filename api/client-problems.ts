/**
 * What the schema cannot say about spec.clients (docs/client-identities.md),
 * checked by validateDistributedKV so that `dkv validate`, `dkv synth` and
 * the controller refuse the same specs, naming the field, before anything is
 * issued or granted: names unique and not etcd's `root` (the controller's
 * user), no `readWrite` prefix sharing a key with another client's
 * `readWrite` prefix (two clients would write each other's keys; a `read`
 * client may overlap anything), no client identities on etcd 3.5 (below),
 * and client identities only
 * where the members authenticate clients by certificate.
 */
import { prefixesOverlap, ROOT } from '../engines/etcd/client-identities.js';
import { etcdVersionOf } from '../engines/etcd/versions.js';
import { CLIENT_CERTIFICATE_REQUEST } from '../engines/etcd/certificate-requests.js';
import type { FieldProblem } from './schema-errors.js';

interface ClientEntry { name?: unknown; prefix?: unknown; access?: unknown }

/** Every problem of `spec.clients` beyond the schema's; `reported` are the schema's, so that no field is reported twice. */
export function clientProblems(spec: Record<string, any> | undefined, reported: readonly FieldProblem[]): FieldProblem[] {
  const clients = spec?.clients;
  if (!Array.isArray(clients)) return [];
  const reportedPaths = reported.map((p) => p.segments.join('.'));
  if (reportedPaths.includes('spec.clients')) return [];
  const problems: FieldProblem[] = [];
  const at = (i: number, field: string) => ['spec', 'clients', i, field];
  const fine = (i: number, field: string) => !reportedPaths.includes(at(i, field).join('.'));
  const entries = clients.map((c: unknown) => (typeof c === 'object' && c !== null ? c as ClientEntry : {}));

  const version = typeof spec?.image === 'string' ? etcdVersionOf(spec.image) : undefined;
  if (version && (version.major < 3 || (version.major === 3 && version.minor < 6))) {
    problems.push({ segments: ['spec', 'clients'], message: `not with etcd ${version.major}.${version.minor}.${version.patch} (spec.image): on etcd 3.5 a NOSPACE alarm `
      + 'rebuilds the apply chain without the authentication check, so a client allowed to write one prefix can fill it to the quota and then disable '
      + 'authentication, change users and roles and delete any key (etcd-io/etcd pull request 22386, open: no 3.5 release carries the fix); use etcd 3.6.0 or later, or leave spec.clients out' });
  }
  const tls = spec?.tls;
  if (clients.length > 0 && tls?.mode === 'cert-manager') {
    problems.push({ segments: ['spec', 'clients'], message: 'not with spec.tls.mode cert-manager: a client identity\'s certificate and etcd\'s root identity (a password and a certificate) are issued by the controller from the cluster\'s own CA, which cert-manager\'s mode has none of; use spec.tls.mode operator for client identities (docs/client-identities.md)' });
  } else if (clients.length > 0 && (tls?.mode === 'disabled' || tls?.client?.enabled === false)) {
    problems.push({ segments: ['spec', 'clients'], message: 'needs client TLS with operator-issued certificates (spec.tls mode operator, client enabled): a client identity is the common name of a certificate the members verify' });
  }
  entries.forEach((client, i) => {
    if (typeof client.name !== 'string' || !fine(i, 'name')) return;
    if (client.name === ROOT) problems.push({ segments: at(i, 'name'), message: 'root is etcd\'s administrator, the controller\'s own user: choose another name' });
    // The common name of the controller's own client certificate: a user of that name would be whatever the controller's certificate can do.
    if (client.name === CLIENT_CERTIFICATE_REQUEST.commonName) problems.push({ segments: at(i, 'name'), message: `${client.name} is the common name of the controller's own client certificate: choose another name` });
    const first = entries.findIndex((c) => c.name === client.name);
    if (first < i) problems.push({ segments: at(i, 'name'), message: `duplicate client name ${JSON.stringify(client.name)} (also spec.clients[${first}].name)` });
  });
  entries.forEach((client, i) => {
    if (typeof client.prefix !== 'string' || !fine(i, 'prefix')) return;
    // A read client may overlap anything: one service writing /orders/ and another (reports, an auditor, a cache) reading
    // it is the sharing etcd's roles are for. Two writers of one key are what is refused.
    if ((client.access ?? 'readWrite') !== 'readWrite') return;
    entries.forEach((other, j) => {
      if (j === i || typeof other.prefix !== 'string' || (other.access ?? 'readWrite') !== 'readWrite') return;
      // A pair of readWrite clients is reported once, at the later one.
      if (j > i) return;
      if (prefixesOverlap(client.prefix as string, other.prefix)) {
        problems.push({ segments: at(i, 'prefix'), message: `${JSON.stringify(client.prefix)} overlaps ${JSON.stringify(other.prefix)}, the readWrite prefix of client ${JSON.stringify(other.name)} (spec.clients[${j}]): a read-write prefix is one client's alone` });
      }
    });
  });
  return problems;
}
