/**
 * What etcd's authentication store must hold for spec.clients
 * (engines/etcd/client-identities.ts): the calls from what it lists to what
 * the spec asks, never more access on the way, nothing when it matches.
 */
import { authActions, clientPermission, prefixRange, type AuthStoreState, type ClientIdentity } from '../../engines/etcd/client-identities.js';

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const orders: ClientIdentity = { name: 'orders', prefix: '/orders/', access: 'readWrite' };
const audit: ClientIdentity = { name: 'audit', prefix: '/orders/', access: 'read' };
const EMPTY: AuthStoreState = { enabled: false, users: [], roles: [] };

/** The store as it stands once `clients` are in it and authentication is on. */
const settled = (clients: readonly ClientIdentity[]): AuthStoreState => ({
  enabled: true,
  users: [{ name: 'root', roles: ['root'] }, ...clients.map((c) => ({ name: c.name, roles: [c.name] }))],
  roles: clients.map((c) => ({ name: c.name, permissions: [clientPermission(c)] })),
});

describe('a client\'s key range', () => {
  it('is etcd\'s prefix range: up to the prefix with its last byte increased', () => {
    expect(prefixRange('/orders/')).toEqual({ key: b64('/orders/'), rangeEnd: b64('/orders0') });
  });

  it('works on the prefix\'s UTF-8 bytes: a prefix ending in ÿ (0xc3 0xbf) ends its range at 0xc3 0xc0', () => {
    expect(prefixRange('/ÿ')).toEqual({ key: b64('/ÿ'), rangeEnd: b64(Buffer.from([0x2f, 0xc3, 0xc0])) });
  });

  it('is read for a read-only client and readwrite for a read-write one', () => {
    expect(clientPermission(audit).type).toBe('READ');
    expect(clientPermission(orders).type).toBe('READWRITE');
  });
});

describe('the calls that bring the store to the spec', () => {
  it('on a store without authentication: root first, each role\'s permission before its user, authentication last', () => {
    expect(authActions([orders], EMPTY, true)).toEqual([
      { type: 'addRootUser' },
      { type: 'grantRootRole' },
      { type: 'addRole', role: 'orders' },
      { type: 'grantPermission', role: 'orders', permission: { key: b64('/orders/'), rangeEnd: b64('/orders0'), type: 'READWRITE' } },
      { type: 'addUser', user: 'orders' },
      { type: 'grantRole', user: 'orders', role: 'orders' },
      { type: 'enable' },
    ]);
  });

  it('holds authentication back until the controller can present root\'s password', () => {
    expect(authActions([orders], EMPTY, false).map((a) => a.type)).not.toContain('enable');
  });

  it('resets root\'s password before enabling, when root exists in a store without authentication (anyone could have set it)', () => {
    const state: AuthStoreState = { enabled: false, users: [{ name: 'root', roles: ['root'] }], roles: [] };
    expect(authActions([], state, true)).toEqual([{ type: 'setRootPassword' }, { type: 'enable' }]);
  });

  it('asks nothing of a store that matches the spec', () => {
    expect(authActions([orders, audit], settled([orders, audit]), true)).toEqual([]);
  });

  it('revokes a removed client: its user, then its role; root stays', () => {
    expect(authActions([orders], settled([orders, audit]), true)).toEqual([
      { type: 'deleteUser', user: 'audit' },
      { type: 'deleteRole', role: 'audit' },
    ]);
  });

  it('removes every client but keeps root and authentication when the list is emptied', () => {
    expect(authActions([], settled([orders, audit]), true).map((a) => a.type)).toEqual(['deleteUser', 'deleteUser', 'deleteRole', 'deleteRole']);
  });

  it('narrows a client moved to another prefix: the old range revoked, the new one granted', () => {
    const moved = { ...orders, prefix: '/shop/orders/' };
    expect(authActions([moved], settled([orders]), true)).toEqual([
      { type: 'revokePermission', role: 'orders', range: { key: b64('/orders/'), rangeEnd: b64('/orders0') } },
      { type: 'grantPermission', role: 'orders', permission: { key: b64('/shop/orders/'), rangeEnd: b64('/shop/orders0'), type: 'READWRITE' } },
    ]);
  });

  it('turns a read-write client read-only by granting its range again as read (etcd replaces the type)', () => {
    expect(authActions([{ ...orders, access: 'read' }], settled([orders]), true)).toEqual([
      { type: 'grantPermission', role: 'orders', permission: { key: b64('/orders/'), rangeEnd: b64('/orders0'), type: 'READ' } },
    ]);
  });

  it('takes back a role granted to a client some other way', () => {
    const state = settled([orders]);
    const widened: AuthStoreState = { ...state, users: state.users.map((u) => (u.name === 'orders' ? { ...u, roles: ['orders', 'root'] } : u)) };
    expect(authActions([orders], widened, true)).toEqual([{ type: 'revokeRole', user: 'orders', role: 'root' }]);
  });
});
