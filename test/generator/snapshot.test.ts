import { Testing } from 'cdk8s';
import { toYaml } from '../../cli/render.js';
import { DistributedKVChart, synthesizeCluster } from '../../constructs/synthesize.js';
import { BACKUP, DEFAULT_CONFIG, kvDocument, validResource } from './support.js';

describe('a three-member cluster with nightly backups in namespace "shop"', () => {
  const resource = validResource(kvDocument({ name: 'orders', namespace: 'shop', size: 3, backup: BACKUP }));

  it('renders the manifest reviewed in the snapshot', () => {
    expect(toYaml(synthesizeCluster(resource, DEFAULT_CONFIG))).toMatchSnapshot();
  });

  it('renders the same objects in a cdk8s test app as synthesizeCluster does', () => {
    const chart = new DistributedKVChart(Testing.app(), 'orders', resource, DEFAULT_CONFIG);
    expect(Testing.synth(chart)).toEqual(synthesizeCluster(resource, DEFAULT_CONFIG));
  });
});
