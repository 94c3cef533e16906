/**
 * What etcd's authentication store must hold for a cluster's client
 * identities (spec.clients, docs/client-identities.md), decided from the
 * spec and what the store lists: pure, so the reconciler's step only reads
 * and the core only acts.
 *
 * Each client is an etcd user and a role of the same name, the role holding
 * one permission on the client's prefix range (read, or readwrite). The user
 * has no password (`options.no_password`): etcd takes the user name from the
 * common name of the client certificate when --client-cert-auth is on, and
 * the certificate, signed by the cluster's CA, is the only credential.
 *
 * `root` (user and role) is the controller's: etcd refuses `auth enable`
 * until a user literally named `root` exists with the root role
 * (server/auth/store.go AuthEnable: ErrRootUserNotExist), and membership
 * changes, defragmentation, alarms and the snapshot need the root role once
 * authentication is on (IsAdminPermitted). Only a root-role user may add or
 * delete users and roles, so every other user and role in the store is one
 * this controller made: one no client names any more is removed.
 */

/** The controller's user and role: etcd's own name for the administrator. */
export const ROOT = 'root';

export type ClientAccess = 'read' | 'readWrite';

export interface ClientIdentity {
  readonly name: string;
  readonly prefix: string;
  readonly access: ClientAccess;
}

/** etcd's permission types (authpb.Permission.Type), as its JSON gateway names them. */
export type PermissionType = 'READ' | 'WRITE' | 'READWRITE';

/** A key range, base64 as the gateway carries bytes. */
export interface KeyRange {
  readonly key: string;
  readonly rangeEnd: string;
}

export interface Permission extends KeyRange {
  readonly type: PermissionType;
}

/** What the authentication store holds, as the controller listed it. */
export interface AuthStoreState {
  readonly enabled: boolean;
  readonly users: readonly { readonly name: string; readonly roles: readonly string[] }[];
  readonly roles: readonly { readonly name: string; readonly permissions: readonly Permission[] }[];
}

export type AuthAction =
  | { readonly type: 'addRootUser' }
  | { readonly type: 'setRootPassword' }
  | { readonly type: 'grantRootRole' }
  | { readonly type: 'addRole'; readonly role: string }
  | { readonly type: 'grantPermission'; readonly role: string; readonly permission: Permission }
  | { readonly type: 'revokePermission'; readonly role: string; readonly range: KeyRange }
  | { readonly type: 'addUser'; readonly user: string }
  | { readonly type: 'grantRole'; readonly user: string; readonly role: string }
  | { readonly type: 'revokeRole'; readonly user: string; readonly role: string }
  | { readonly type: 'deleteUser'; readonly user: string }
  | { readonly type: 'deleteRole'; readonly role: string }
  | { readonly type: 'enable' };

/**
 * The range etcd calls a prefix (clientv3.GetPrefixRangeEnd): from the
 * prefix up to, not including, the prefix with its last byte increased. The
 * prefix is UTF-8, whose bytes never reach 0xff, so the last byte always can
 * be (etcd's carry over 0xff bytes is never needed); the schema forbids an
 * empty prefix (the whole keyspace, which is root's).
 */
export function prefixRange(prefix: string): KeyRange {
  const key = Buffer.from(prefix, 'utf8');
  const end = Buffer.from(key);
  end[end.length - 1]++;
  return { key: key.toString('base64'), rangeEnd: end.toString('base64') };
}

/** The one permission a client's role holds. */
export function clientPermission(client: ClientIdentity): Permission {
  return { ...prefixRange(client.prefix), type: client.access === 'read' ? 'READ' : 'READWRITE' };
}

/** Whether two prefixes share a key: one starts with the other. */
export const prefixesOverlap = (a: string, b: string): boolean => a.startsWith(b) || b.startsWith(a);

export const sameRange = (a: KeyRange, b: KeyRange): boolean => a.key === b.key && a.rangeEnd === b.rangeEnd;

/**
 * The calls that take the store from `state` to what `clients` ask, in an
 * order that never grants more than the spec at any moment: removed users
 * and roles first (a prefix a removed client held may be another's now),
 * each role's permission before the user that holds it, the root user
 * before authentication is turned on, and that last (`enableAuth` false
 * holds it back: the controller enables only once it can present the root
 * user's password from a Secret it reads back, so that it cannot lock
 * itself out). Empty when the store already matches.
 */
export function authActions(clients: readonly ClientIdentity[], state: AuthStoreState, enableAuth: boolean): AuthAction[] {
  const actions: AuthAction[] = [];
  const wanted = new Map(clients.map((c) => [c.name, c]));
  for (const user of state.users) if (user.name !== ROOT && !wanted.has(user.name)) actions.push({ type: 'deleteUser', user: user.name });
  for (const role of state.roles) if (role.name !== ROOT && !wanted.has(role.name)) actions.push({ type: 'deleteRole', role: role.name });

  const root = state.users.find((u) => u.name === ROOT);
  if (!root) actions.push({ type: 'addRootUser' });
  // While authentication is off, whoever reaches a member could have set root's password: it is set to the Secret's before enabling.
  else if (!state.enabled && enableAuth) actions.push({ type: 'setRootPassword' });
  if (!root?.roles.includes(ROOT)) actions.push({ type: 'grantRootRole' });

  for (const client of clients) {
    const permission = clientPermission(client);
    const role = state.roles.find((r) => r.name === client.name);
    if (!role) actions.push({ type: 'addRole', role: client.name });
    for (const held of role?.permissions ?? []) {
      if (!sameRange(held, permission)) actions.push({ type: 'revokePermission', role: client.name, range: { key: held.key, rangeEnd: held.rangeEnd } });
    }
    // Granting the same range again replaces its type (read <-> readwrite): etcd's RoleGrantPermission.
    if (!role?.permissions.some((p) => sameRange(p, permission) && p.type === permission.type)) actions.push({ type: 'grantPermission', role: client.name, permission });
    const user = state.users.find((u) => u.name === client.name);
    if (!user) actions.push({ type: 'addUser', user: client.name });
    if (!user?.roles.includes(client.name)) actions.push({ type: 'grantRole', user: client.name, role: client.name });
    // A role granted to the user some other way (by hand, through root) goes: the spec is all it may do.
    for (const extra of user?.roles.filter((r) => r !== client.name) ?? []) actions.push({ type: 'revokeRole', user: client.name, role: extra });
  }
  if (!state.enabled && enableAuth) actions.push({ type: 'enable' });
  return actions;
}
