/**
 * How synthesizeCluster's own cdk8s App renders a cluster's objects: the
 * same Kubernetes JSON that cdk8s and the cdk8s-plus-27 L1 classes make of
 * them, converted directly from their props.
 *
 * cdk8s renders an object by resolving every value of it (for each one it
 * walks up to the App to find its resolvers and asks each of them), then
 * copying it with its keys sorted, then the L1 class copies it again into
 * its own field order. For our objects that was most of synthesis and a
 * quarter of `dkv synth`'s time, for nothing to resolve: the constructs build
 * their props from the spec and the configuration as plain data, whose only
 * non-plain values are the L1's union wrappers (Quantity, IntOrString),
 * which render as their value, and the few fields the L1 classes name
 * otherwise (WIRE_NAMES). Resolvers or JSON patches added by a user could
 * change that, so only an App that nobody else can reach renders this
 * way: the one synthesizeCluster creates, and discards, for each cluster
 * (the CLI's and the controller's one synthesis function). An App of a
 * cdk8s user's, where a DistributedKVCluster is one construct among theirs,
 * renders through cdk8s as before. test/generator/plain-rendering.test.ts
 * holds the two renderings equal on clusters of every shape.
 */
import { App, JsonPatch, type ApiObject } from 'cdk8s';
import type { IConstruct } from 'constructs';

const plainApps = new WeakSet<App>();

/** An App of synthesizeCluster's own: its objects render plainly (plainJson). Called before anything is added to it. */
export function renderPlainly(app: App): App {
  plainApps.add(app);
  return app;
}

/** Whether a construct belongs to an App that renderPlainly marked. */
export function rendersPlainly(construct: IConstruct): boolean {
  return plainApps.has(App.of(construct));
}

/**
 * A value as cdk8s renders it and then the L1 class converts it: objects
 * with their keys sorted and without null or undefined fields, a union
 * wrapper (an object of a class, with a number or string `value`) as its
 * value. Anything else that is not plain data cannot come from our
 * constructs, and cdk8s would refuse it too.
 */
function plainValue(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(plainValue);
  if (value.constructor !== Object) {
    const wrapped = (value as { value?: unknown }).value;
    if (typeof wrapped === 'number' || typeof wrapped === 'string') return wrapped;
    throw new Error(`can't render non-simple object of type '${value.constructor.name}'`);
  }
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = plainValue((value as Record<string, unknown>)[key]);
    if (item !== undefined) out[key] = item;
  }
  return out;
}

/** cdk8s-plus-27's names for the fields of a pod spec and a Service spec that Kubernetes spells otherwise. */
const POD_SPEC_NAMES = { hostIpc: 'hostIPC', hostPid: 'hostPID', setHostnameAsFqdn: 'setHostnameAsFQDN' };
const SERVICE_SPEC_NAMES = { clusterIp: 'clusterIP', loadBalancerIp: 'loadBalancerIP' };

/**
 * Where the L1 classes rename a field of the kinds a cluster is made of: by
 * kind, the path of the object holding it and its names. Only these
 * positions are renamed: elsewhere a key is data (a label, a ConfigMap's
 * file) and stays as written. The kinds' other fields have one name in
 * both; the test comparing the renderings fails on any this table lacks.
 */
const WIRE_NAMES: Record<string, readonly (readonly [readonly string[], Record<string, string>])[]> = {
  Service: [[['spec'], SERVICE_SPEC_NAMES]],
  StatefulSet: [[['spec', 'template', 'spec'], POD_SPEC_NAMES]],
  CronJob: [[['spec', 'jobTemplate', 'spec', 'template', 'spec'], POD_SPEC_NAMES]],
};

function renameFields(json: Record<string, unknown>, kind: string): void {
  for (const [path, names] of WIRE_NAMES[kind] ?? []) {
    let holder: unknown = json;
    for (const segment of path) holder = (holder as Record<string, unknown> | undefined)?.[segment];
    if (holder === null || typeof holder !== 'object') continue;
    const fields = holder as Record<string, unknown>;
    for (const [name, wireName] of Object.entries(names)) {
      if (!(name in fields)) continue;
      fields[wireName] = fields[name];
      delete fields[name];
    }
  }
}

/**
 * One object's Kubernetes JSON from its props, as cdk8s and the L1 class
 * render it: apiVersion, kind and the metadata (cdk8s's own rendering of it,
 * with the chart's namespace and labels) first, then every other field as
 * plainValue makes it; then the object's own JSON patches (a construct's
 * addJsonPatch, applied, as cdk8s does, to the props' names); then the
 * fields the L1 class names otherwise get their Kubernetes names.
 */
export function plainJson(object: ApiObject): Record<string, unknown> {
  // ApiObject keeps its props and patches private (the props are the L1 class's own, with its apiVersion and kind):
  // a cdk8s that named them otherwise fails here, on every object, and the equivalence test with it.
  const { props, patches } = object as unknown as { props: Record<string, unknown>; patches: JsonPatch[] };
  const { apiVersion, kind, metadata: _metadata, ...fields } = props;
  let json: Record<string, unknown> = { apiVersion, kind, metadata: object.metadata.toJson() };
  for (const key of Object.keys(fields).sort()) {
    const value = plainValue(fields[key]);
    if (value !== undefined) json[key] = value;
  }
  if (patches.length > 0) json = JsonPatch.apply(json, ...patches);
  renameFields(json, object.kind);
  return json;
}
