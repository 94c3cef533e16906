/**
 * etcd's authentication store through its v3 HTTP/JSON gateway
 * (`/v3/auth/*`), and the root user's token for every other gateway call
 * once authentication is on (docs/client-identities.md).
 *
 * Why a password and a token for the controller, when the clients go by
 * their certificate alone: etcd reads the user from a certificate's common
 * name only on its gRPC API. Its gateway re-dials gRPC itself, so the
 * common name is lost, and once authentication is on it refuses any /v3/
 * request whose certificate has a common name at all ("CommonName of client
 * sending a request against gateway will be ignored", server/embed/serve.go;
 * server/auth/store.go AuthInfoFromTLS ignores it for gateway requests). So
 * the controller and the backup runner, which speak the gateway, present a
 * certificate without a common name (the TLS handshake still needs the
 * cluster's CA) and authenticate as `root` with a password for a token
 * (`/v3/auth/authenticate`, sent as the Authorization header). etcd's
 * simple tokens live in each member's memory, replicated when issued: a
 * member restarted since knows none, and answers "invalid auth token"; the
 * call is then made again with a new token, once.
 */
import type { Agent } from 'node:https';
import { postJson, type EtcdAnswer, type EtcdClientTls } from './etcd-http.js';
import { ROOT, type AuthAction, type AuthStoreState, type Permission, type PermissionType } from './client-identities.js';

/** Tokens by certificate and user (one certificate per cluster): a token is good on every member that saw it issued. */
const tokens = new Map<string, string>();
const MAX_TOKENS = 1024;

/** What etcd answers a call that needs a user it did not get, or a token it does not know. */
const NEEDS_LOGIN = /user name is empty|invalid auth token|auth: revision in header is old|authentication is required/i;
const AUTH_OFF = /authentication is not enabled/i;

function tokenKey(tls: EtcdClientTls): string {
  return `${tls.cert}\0${tls.login?.user}`;
}

/** A token for `tls.login` from the member at `origin`; undefined while authentication is off (no token is needed then). */
async function authenticate(origin: string, tls: EtcdClientTls, signal: AbortSignal, agent: Agent | undefined): Promise<string | undefined> {
  const answer = await postJson(`${origin}/v3/auth/authenticate`, JSON.stringify({ name: tls.login!.user, password: tls.login!.password }), signal, agent);
  if (answer.status >= 200 && answer.status < 300) return (JSON.parse(answer.text) as { token?: string }).token;
  if (AUTH_OFF.test(answer.text)) return undefined;
  return Promise.reject(new Error(`authenticating as ${tls.login!.user}: ${answer.status}: ${messageOf(answer)}`));
}

/**
 * POSTs as `tls.login` where it names one: with the cached token, and, when
 * the member asks for a user or does not know the token, once more with a
 * new one. Without a login, a plain postJson.
 */
export async function postAs(url: string, body: string, signal: AbortSignal, agent: Agent | undefined, tls: EtcdClientTls | undefined): Promise<EtcdAnswer> {
  if (!tls?.login) return postJson(url, body, signal, agent);
  const key = tokenKey(tls);
  const first = await postJson(url, body, signal, agent, tokens.get(key));
  if (!(first.status >= 400 && NEEDS_LOGIN.test(first.text))) return first;
  const token = await authenticate(new URL(url).origin, tls, signal, agent);
  if (token === undefined) return first;
  tokens.set(key, token);
  if (tokens.size > MAX_TOKENS) tokens.delete(tokens.keys().next().value!);
  return postJson(url, body, signal, agent, token);
}

/** The token `postAs` would send (the snapshot stream sets its own headers); a new one when none is cached. */
export async function tokenFor(origin: string, tls: EtcdClientTls, signal: AbortSignal, agent: Agent | undefined): Promise<string | undefined> {
  if (!tls.login) return undefined;
  const cached = tokens.get(tokenKey(tls));
  if (cached) return cached;
  const token = await authenticate(origin, tls, signal, agent);
  if (token !== undefined) tokens.set(tokenKey(tls), token);
  return token;
}

function messageOf(answer: EtcdAnswer): string {
  try {
    return (JSON.parse(answer.text) as { message?: string }).message ?? answer.text;
  } catch {
    return answer.text;
  }
}

interface GatewayPermission { permType?: PermissionType | number; key?: string; range_end?: string; rangeEnd?: string }
const PERMISSION_TYPES: readonly PermissionType[] = ['READ', 'WRITE', 'READWRITE'];

/** The gateway omits a zero enum (READ) and may name or number the type. */
function permissionOf(p: GatewayPermission): Permission {
  const type = typeof p.permType === 'number' ? PERMISSION_TYPES[p.permType] : p.permType ?? 'READ';
  return { type, key: p.key ?? '', rangeEnd: p.range_end ?? p.rangeEnd ?? '' };
}

/** One member's authentication store, called as the root user (`tls.login`). */
export class EtcdAuth {
  /**
   * @param endpoint a member's client URL (https://: client identities need client TLS)
   * @param tls the root identity: a certificate without a common name and root's password
   */
  constructor(private readonly endpoint: string, private readonly tls: EtcdClientTls, private readonly agent: Agent, private readonly timeoutMs = 5000) {}

  /** Whether authentication is on, and every user and role with what it holds. */
  async state(): Promise<AuthStoreState> {
    const status = await this.post<{ enabled?: boolean }>('/v3/auth/status', {});
    const users = (await this.post<{ users?: string[] }>('/v3/auth/user/list', {})).users ?? [];
    const roles = (await this.post<{ roles?: string[] }>('/v3/auth/role/list', {})).roles ?? [];
    return {
      enabled: Boolean(status.enabled),
      users: await Promise.all(users.map(async (name) => ({ name, roles: (await this.post<{ roles?: string[] }>('/v3/auth/user/get', { name })).roles ?? [] }))),
      roles: await Promise.all(roles.filter((r) => r !== ROOT).map(async (name) => ({
        name, permissions: ((await this.post<{ perm?: GatewayPermission[] }>('/v3/auth/role/get', { role: name })).perm ?? []).map(permissionOf),
      }))),
    };
  }

  /** Makes one decided call. */
  async apply(action: AuthAction): Promise<void> {
    const password = this.tls.login!.password;
    switch (action.type) {
      case 'addRootUser': await this.post('/v3/auth/user/add', { name: ROOT, password }); return;
      case 'setRootPassword': await this.post('/v3/auth/user/changepw', { name: ROOT, password }); return;
      case 'grantRootRole': await this.post('/v3/auth/user/grant', { user: ROOT, role: ROOT }); return;
      case 'addRole': await this.post('/v3/auth/role/add', { name: action.role }); return;
      case 'grantPermission':
        await this.post('/v3/auth/role/grant', { name: action.role, perm: { permType: action.permission.type, key: action.permission.key, range_end: action.permission.rangeEnd } });
        return;
      case 'revokePermission': await this.post('/v3/auth/role/revoke', { role: action.role, key: action.range.key, range_end: action.range.rangeEnd }); return;
      // No password: etcd takes the user from the certificate's common name, the only credential (options.no_password).
      case 'addUser': await this.post('/v3/auth/user/add', { name: action.user, options: { no_password: true } }); return;
      case 'grantRole': await this.post('/v3/auth/user/grant', { user: action.user, role: action.role }); return;
      case 'revokeRole': await this.post('/v3/auth/user/revoke', { name: action.user, role: action.role }); return;
      case 'deleteUser': await this.post('/v3/auth/user/delete', { name: action.user }); return;
      case 'deleteRole': await this.post('/v3/auth/role/delete', { role: action.role }); return;
      case 'enable': await this.post('/v3/auth/enable', {}); return;
    }
  }

  private async post<T>(path: string, body: unknown): Promise<T> {
    const answer = await postAs(this.endpoint + path, JSON.stringify(body), AbortSignal.timeout(this.timeoutMs), this.agent, this.tls);
    if (answer.status < 200 || answer.status >= 300) throw new Error(`${this.endpoint}${path}: ${answer.status}: ${messageOf(answer)}`);
    return JSON.parse(answer.text) as T;
  }
}
