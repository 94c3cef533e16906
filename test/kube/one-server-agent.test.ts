import { Agent } from 'node:https';
import { OneServerAgent } from '../../kube/client.js';

describe('OneServerAgent', () => {
  const ca = Buffer.from('-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n');
  const cert = Buffer.from('-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n');
  const key = Buffer.from('-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n');
  const node = new Agent();

  it('names a pool as Node does, and computes the name once while the host and TLS material stay the same', () => {
    const agent = new OneServerAgent();
    const options = { host: '127.0.0.1', port: 6443, ca, cert, key, method: 'PATCH' };
    // Counts how often Node's own naming runs (the agent calls it through super).
    const nodeGetName = Agent.prototype.getName;
    let nodeNames = 0;
    Agent.prototype.getName = function (this: Agent, ...args: Parameters<Agent['getName']>) {
      nodeNames++;
      return nodeGetName.apply(this, args);
    };
    try {
      const first = agent.getName(options);
      // A request's options are a new object each time; the TLS material is the connection's own.
      expect(agent.getName({ ...options, method: 'GET' })).toBe(first);
      expect(agent.getName({ ...options })).toBe(first);
      expect(nodeNames).toBe(1);
    } finally {
      Agent.prototype.getName = nodeGetName;
    }
    expect(agent.getName(options)).toBe(node.getName(options));
  });

  it('names a new pool when the certificate rotates or the host changes, so new connections carry the new material', () => {
    const agent = new OneServerAgent();
    const options = { host: '127.0.0.1', port: 6443, ca, cert, key };
    const before = agent.getName(options);
    const rotated = { ...options, cert: Buffer.from('-----BEGIN CERTIFICATE-----\nrotated\n-----END CERTIFICATE-----\n') };
    expect(agent.getName(rotated)).not.toBe(before);
    expect(agent.getName(rotated)).toBe(node.getName(rotated));
    expect(agent.getName({ ...options, host: '127.0.0.2' })).toBe(node.getName({ ...options, host: '127.0.0.2' }));
    expect(agent.getName(options)).toBe(before);
  });
});
