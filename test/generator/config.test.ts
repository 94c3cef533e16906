/**
 * A platform team changes names, labels and patches through a configuration
 * file, never through code; a broken file is reported like a broken spec.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadCheckedConfig } from '../../constructs/config-check.js';
import { probeSpecs } from '../../api/config-probes.js';
import { InputError, InvalidConfigError } from '../../api/problem.js';
import { desiredHash } from '../../model/desired-hash.js';
import { synthesizeCluster } from '../../constructs/synthesize.js';
import { ALIAS_BOMB, BACKUP, byRole, changedObjects, CLI_TIMEOUT_MS, DEFAULT_CONFIG, dkv, hashes, kvDocument, readTree, synth, removeTemporaryDirectories, temporaryDirectory, validResource } from './support.js';

afterAll(removeTemporaryDirectories);

function configFile(text: string): string {
  const file = join(temporaryDirectory('dkv-config-'), 'dkv.config.yaml');
  writeFileSync(file, text);
  return file;
}

function loadError(file: string): InputError {
  try {
    loadCheckedConfig(file);
  } catch (e) {
    if (e instanceof InputError) return e;
    throw e;
  }
  throw new Error(`${file} loaded without an error`);
}

describe('a configuration file', () => {
  it('names every generated object from its name templates, and the objects still refer to each other', () => {
    const config = loadCheckedConfig(
      configFile(`
names:
  statefulSet: "{name}-kv"
  headlessService: "{name}-mesh"
  clientService: "{name}-client"
  podDisruptionBudget: "{name}-pdb"
  backupCronJob: "{name}-snapshot"
`),
    );
    const { statefulSet, headless, client, pdb, cronJob } = byRole(synth({ name: 'orders', backup: BACKUP }, config));
    expect([statefulSet, headless, client, pdb, cronJob!].map((o) => o.metadata.name)).toEqual(['orders-kv', 'orders-mesh', 'orders-client', 'orders-pdb', 'orders-snapshot']);
    expect(statefulSet.spec.serviceName).toBe('orders-mesh');
    const env: { name: string; value?: string }[] = cronJob!.spec.jobTemplate.spec.template.spec.containers[0].env;
    expect(env.map((e) => e.value)).toContain('orders-client:2379');
  });

  it('puts its labels on every object and pod without widening the selector', () => {
    const config = loadCheckedConfig(
      configFile(`
labels:
  app.kubernetes.io/name: distributedkv
  app.kubernetes.io/instance: "{name}"
  app.kubernetes.io/component: "{component}"
  app.kubernetes.io/managed-by: dkv
  example.com/team: payments
`),
    );
    const objects = synth({ backup: BACKUP }, config);
    const { statefulSet, cronJob } = byRole(objects);
    for (const object of objects) expect(object.metadata.labels).toHaveProperty(['example.com/team'], 'payments');
    expect(statefulSet.spec.template.metadata.labels).toHaveProperty(['example.com/team'], 'payments');
    expect(cronJob!.spec.jobTemplate.spec.template.metadata.labels).toHaveProperty(['example.com/team'], 'payments');
    expect(statefulSet.spec.selector.matchLabels).not.toHaveProperty(['example.com/team']);
  });

  it('applies a StatefulSet patch to the StatefulSet alone, before hashing', () => {
    const config = loadCheckedConfig(
      configFile(`
patches:
  StatefulSet:
    - { op: add, path: /spec/template/spec/priorityClassName, value: kv-critical }
`),
    );
    const defaults = synth({ backup: BACKUP });
    const patched = synth({ backup: BACKUP }, config);
    const { statefulSet } = byRole(patched);
    expect(statefulSet.spec.template.spec.priorityClassName).toBe('kv-critical');
    expect(byRole(defaults).statefulSet.spec.template.spec.priorityClassName).toBeUndefined();
    expect(changedObjects(hashes(defaults), hashes(patched, config))).toEqual(['StatefulSet/orders']);
    expect(statefulSet.metadata.annotations?.[config.hashAnnotation]).toBe(desiredHash(statefulSet, config.hashAnnotation));
  });

  it('patches the object as Kubernetes reads it: wire field names, plain-string quantities and fields newer than the constructs\' Kubernetes types', () => {
    const config = loadCheckedConfig(
      configFile(`
patches:
  StatefulSet:
    - { op: add, path: /spec/template/spec/containers/0/resources, value: { limits: { cpu: "1", memory: 2Gi } } }
  Service:
    - { op: add, path: /spec/sessionAffinityConfig, value: { clientIP: { timeoutSeconds: 30 } } }
    - { op: add, path: /spec/trafficDistribution, value: PreferClose }
`),
    );
    const { statefulSet, client, headless } = byRole(synth({}, config));
    expect(statefulSet.spec.template.spec.containers[0].resources).toEqual({ limits: { cpu: '1', memory: '2Gi' } });
    for (const service of [client, headless]) {
      expect(service.spec.sessionAffinityConfig).toEqual({ clientIP: { timeoutSeconds: 30 } });
      expect(service.spec.trafficDistribution).toBe('PreferClose');
      expect(service.metadata.annotations?.[config.hashAnnotation]).toBe(desiredHash(service, config.hashAnnotation));
    }
  });

  it('moves the server ports everywhere they are used', () => {
    const config = loadCheckedConfig(configFile('ports: { client: 7000, peer: 7001, metrics: 7002 }\n'));
    const { statefulSet, headless, client, cronJob, memberConfig } = byRole(synth({ backup: BACKUP }, config));
    const member = statefulSet.spec.template.spec.containers[0];
    expect(member.ports.map((p: { containerPort: number }) => p.containerPort)).toEqual([7000, 7001, 7002]);
    // etcd listens and advertises on them too.
    expect(member.args).toEqual(expect.arrayContaining([
      '--listen-client-urls=https://0.0.0.0:7000', '--listen-peer-urls=https://0.0.0.0:7001', '--listen-metrics-urls=http://0.0.0.0:7002',
      '--advertise-client-urls=https://$(POD_NAME).orders-peers.$(POD_NAMESPACE).svc.cluster.local:7000',
    ]));
    expect(memberConfig!.data.ETCD_INITIAL_CLUSTER.match(/:7001/g)).toHaveLength(3);
    expect(headless.spec.ports.map((p: { port: number }) => p.port)).toEqual([7000, 7001]);
    expect(client.spec.ports.map((p: { port: number }) => p.port)).toEqual([7000]);
    const env: { value?: string }[] = cronJob!.spec.jobTemplate.spec.template.spec.containers[0].env;
    expect(env.map((e) => e.value)).toContain('orders:7000');
  });

  it('with engine generic, runs the image with the DKV_* environment contract and probes it by TCP', () => {
    const config = loadCheckedConfig(configFile('engine: generic\n'));
    const member = byRole(synth({ size: 5 }, config)).statefulSet.spec.template.spec.containers[0];
    expect(member.command).toBeUndefined();
    expect(member.args).toBeUndefined();
    expect(Object.fromEntries(member.env.filter((e: { value?: string }) => e.value).map((e: { name: string; value: string }) => [e.name, e.value])))
      .toEqual({ DKV_CLUSTER_SIZE: '5', DKV_PEER_SERVICE: 'orders-peers', DKV_DATA_DIR: '/var/lib/dkv' });
    expect(member.readinessProbe.tcpSocket).toEqual({ port: 'client' });
    expect(member.ports.map((p: { name: string }) => p.name)).toEqual(['client', 'peer']);
    const { statefulSet, memberConfig } = byRole(synth({ size: 5 }, config));
    expect(statefulSet.spec.updateStrategy).toEqual({ type: 'RollingUpdate' });
    expect(statefulSet.spec.persistentVolumeClaimRetentionPolicy).toBeUndefined();
    expect(memberConfig).toBeUndefined();
  });

  it('that is invalid is reported as an InputError naming the file and every bad field', () => {
    const file = configFile('ports:\n  client: "x"\nnames:\n  statefulSet: kv\n');
    const error = loadError(file);
    expect(error.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ file, path: 'ports.client' }),
        expect.objectContaining({ file, path: 'names.statefulSet' }),
      ]),
    );
    expect(error.message).toContain(`${file}: ports.client: must be integer`);
    expect(error.message).toContain(`${file}: names.statefulSet: must match`);
  });

  it('whose selector names a label it does not set is reported at that entry', () => {
    const file = configFile('selectorLabels: [app.kubernetes.io/name, example.com/missing]\n');
    expect(loadError(file).problems).toEqual([expect.objectContaining({ file, path: 'selectorLabels[1]' })]);
  });

  it('that is an alias bomb (billion laughs) is reported as invalid YAML naming the file, not an internal error', () => {
    const file = configFile(ALIAS_BOMB);
    expect(loadError(file).problems).toEqual([{ file, path: '', message: 'invalid YAML: Excessive alias count indicates a resource exhaustion attack' }]);
  });

  it('that is an alias bomb makes dkv synth and dkv validate exit 1 naming the file, writing nothing', () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, 'bomb.config.yaml'), ALIAS_BOMB);
    writeFileSync(join(dir, 'orders.yaml'), JSON.stringify(kvDocument()));
    for (const args of [['synth', '--specs', 'orders.yaml', '--out', 'out'], ['validate', 'orders.yaml']]) {
      const result = dkv([...args, '--config', 'bomb.config.yaml'], dir);
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^bomb\.config\.yaml: invalid YAML: Excessive alias count/m);
      expect(result.stderr).not.toContain('internal error');
      expect(result.stderr).not.toContain('    at ');
    }
    expect(Object.keys(readTree(dir)).sort()).toEqual(['bomb.config.yaml', 'orders.yaml']);
  }, CLI_TIMEOUT_MS);

  it('that is invalid makes dkv synth exit 1 naming the file and field, writing nothing', () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, 'bad.config.yaml'), 'ports: { client: 2379, peer: 2379 }\n');
    writeFileSync(join(dir, 'orders.yaml'), JSON.stringify(kvDocument()));
    const result = dkv(['synth', '--specs', 'orders.yaml', '--out', 'out', '--config', 'bad.config.yaml'], dir);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('bad.config.yaml: ports.peer: must differ from ports.client');
    expect(result.stderr).not.toContain('    at ');
    expect(Object.keys(readTree(dir)).sort()).toEqual(['bad.config.yaml', 'orders.yaml']);
  }, CLI_TIMEOUT_MS);
});

describe('a configuration that would generate broken objects is rejected when loaded, naming the field', () => {
  const problemsOf = (text: string) => loadError(configFile(text)).problems.map((p) => `${p.path}: ${p.message}`);

  it('an unknown engine, or a metrics port shared with another, names the field', () => {
    expect(problemsOf('engine: redis\n')).toEqual(['engine: must be one of "etcd", "generic" (got "redis")']);
    expect(problemsOf('ports: { metrics: 2379 }\n')).toEqual(['ports.metrics: must differ from ports.client and ports.peer']);
  });

  it('a patch whose test fails names the patch', () => {
    expect(problemsOf('patches: {StatefulSet: [{op: test, path: /spec/replicas, value: 99}]}')).toEqual([
      expect.stringMatching(/^patches\.StatefulSet\[0\]: cannot be applied to the generated StatefulSet: .*Test operation failed/),
    ]);
  });

  it('a remove of a path that does not exist is not silently ignored', () => {
    expect(problemsOf('patches: {StatefulSet: [{op: remove, path: /spec/nothere}]}')).toEqual(['patches.StatefulSet[0]: /spec/nothere does not exist in the generated StatefulSet']);
  });

  it('a patch that needs resource requests, tried on a spec with limits only (which replace the configured defaults whole), names the file, the patch and the kind of spec it breaks', () => {
    const file = configFile('patches: {StatefulSet: [{op: remove, path: /spec/template/spec/containers/0/resources/requests}]}\n');
    expect(loadError(file).problems).toEqual([
      { file, path: 'patches.StatefulSet[0]', message: '/spec/template/spec/containers/0/resources/requests does not exist in the generated StatefulSet of a cluster with resource limits only' },
    ]);
  });

  it('a patch that needs a storageClassName, tried on a spec without one', () => {
    expect(problemsOf('patches: {StatefulSet: [{op: replace, path: /spec/volumeClaimTemplates/0/spec/storageClassName, value: fast}]}')).toEqual([
      'patches.StatefulSet[0]: /spec/volumeClaimTemplates/0/spec/storageClassName does not exist in the generated StatefulSet of a cluster with no storage section or storage without storageClassName',
    ]);
  });

  it('a patch that adds into resource limits, tried on specs without them (a spec without resources has the configured defaults, limits included)', () => {
    expect(problemsOf('patches: {StatefulSet: [{op: add, path: /spec/template/spec/containers/0/resources/limits/cpu, value: 2}]}')).toEqual([
      expect.stringMatching(/^patches\.StatefulSet\[0\]: cannot be applied to the generated StatefulSet of a cluster with resource requests only: /),
    ]);
  });

  it('a path checked against the object as the operations before it left it', () => {
    expect(problemsOf('patches: {StatefulSet: [{op: add, path: /spec/template/spec/priorityClassName, value: a}, {op: remove, path: /spec/template/spec/priorityClassName}, {op: remove, path: /spec/template/spec/priorityClassName}]}')).toEqual([
      'patches.StatefulSet[2]: /spec/template/spec/priorityClassName does not exist in the generated StatefulSet',
    ]);
  });

  it('a patch that renames an object, which the name rules and the name-clash check could not see', () => {
    expect(problemsOf('patches: {Service: [{op: replace, path: /metadata/name, value: shared}]}')).toEqual([
      'patches.Service[0]: /metadata/name: a patch cannot rename or move an object; set its name in names.* instead',
    ]);
  });

  it('two Services with the same name', () => {
    expect(problemsOf('names: {headlessService: "{name}"}')).toEqual([expect.stringMatching(/^names\.clientService: must differ from names\.headlessService/)]);
  });

  it('a selector that would also pick the backup pods', () => {
    expect(problemsOf('selectorLabels: [app.kubernetes.io/name, app.kubernetes.io/instance]')).toEqual([expect.stringMatching(/^selectorLabels: must include a label whose value differs between server and backup pods/)]);
  });

  it('a label value Kubernetes rejects', () => {
    expect(problemsOf('labels: {app.kubernetes.io/name: "Distributed KV", app.kubernetes.io/instance: "{name}", app.kubernetes.io/component: "{component}"}')).toEqual([
      expect.stringMatching(/^labels\.app\.kubernetes\.io\/name: would give the label value "Distributed KV", which Kubernetes rejects/),
    ]);
  });
});

describe('a patch that applies to every probe spec but not to a user\'s cluster', () => {
  /** Holds for every probe (they all run one image) and for no real cluster. */
  const probeImageTest = (): string => {
    const images = new Set(probeSpecs(DEFAULT_CONFIG).map((p) => p.resource.spec.image));
    expect(images.size).toBe(1);
    return `patches:\n  StatefulSet:\n    - { op: test, path: /spec/template/spec/containers/0/image, value: ${JSON.stringify([...images][0])} }\n`;
  };

  it('makes synthesizeCluster throw an InvalidConfigError naming the configuration file and the patch', () => {
    const file = configFile(probeImageTest());
    const config = loadCheckedConfig(file);
    let error: unknown;
    try {
      synthesizeCluster(validResource(kvDocument(), config), config);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidConfigError);
    expect((error as InvalidConfigError).problems).toEqual([
      { file, path: 'patches.StatefulSet[0]', message: expect.stringMatching(/^cannot be applied to the generated StatefulSet of DistributedKV "shop\/orders": .*Test operation failed$/) },
    ]);
  });

  it('makes dkv synth exit 1 naming the configuration file and the patch, with no stack trace, writing nothing', () => {
    const dir = temporaryDirectory();
    writeFileSync(join(dir, 'patch.config.yaml'), probeImageTest());
    writeFileSync(join(dir, 'orders.yaml'), JSON.stringify(kvDocument()));
    const result = dkv(['synth', '--specs', 'orders.yaml', '--out', 'out', '--config', 'patch.config.yaml'], dir);
    expect(result.stderr).toMatch(/^patch\.config\.yaml: patches\.StatefulSet\[0\]: cannot be applied to the generated StatefulSet of DistributedKV "shop\/orders": .*Test operation failed$/m);
    expect(result.stderr).not.toContain('    at ');
    expect(result.stderr).not.toContain('internal error');
    expect(result.status).toBe(1);
    expect(Object.keys(readTree(dir)).sort()).toEqual(['orders.yaml', 'patch.config.yaml']);
  }, CLI_TIMEOUT_MS);
});
