import { maxClusterNameLength } from '../model/cluster-identity.js';
import type { GeneratorConfig } from './config.js';
import { CUSTOM_MESSAGE, SYNONYMS } from './schema-errors.js';
import { API_GROUP, KIND, SCHEMA } from './validate.js';

export const PLURAL = 'distributedkvs';
export const CRD_NAME = `${PLURAL}.${API_GROUP}`;

/** JSON Schema keywords with no place in a CRD's structural schema. */
const DROPPED = new Set(['$schema', '$id', 'title', 'definitions', 'additionalProperties', CUSTOM_MESSAGE, SYNONYMS]);

/**
 * JSON Schema → structural OpenAPI v3: `$ref`s inlined, draft-07-only
 * keywords dropped. `additionalProperties: false` has no structural
 * equivalent; the API server prunes unknown fields instead, and rejects them
 * when a client asks for strict field validation (kubectl's default).
 */
function toStructural(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toStructural);
  if (typeof node !== 'object' || node === null) return node;
  const obj = node as Record<string, unknown>;
  if (typeof obj.$ref === 'string') {
    const name = obj.$ref.replace('#/definitions/', '');
    return toStructural(SCHEMA.definitions[name]);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    if (DROPPED.has(key)) continue;
    if (key === 'required' || key === 'enum' || key === 'default' || key === 'x-kubernetes-list-map-keys') {
      out[key] = value;
    } else {
      out[key] = toStructural(value);
    }
  }
  // Maps (labels, annotations) keep their value schema.
  if (typeof obj.additionalProperties === 'object') out.additionalProperties = toStructural(obj.additionalProperties);
  // An integer-or-quantity field carries no type of its own.
  if (obj['x-kubernetes-int-or-string'] === true) delete out.type;
  return out;
}

/**
 * The CustomResourceDefinition for DistributedKV, derived from the JSON
 * Schema and the generator configuration (which decides how long a cluster's
 * name may be).
 */
export function customResourceDefinition(config: GeneratorConfig): Record<string, unknown> {
  const maxName = maxClusterNameLength(config);
  const properties = SCHEMA.properties as Record<string, unknown>;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME },
    spec: {
      group: API_GROUP,
      names: { kind: KIND, listKind: `${KIND}List`, plural: PLURAL, singular: 'distributedkv', shortNames: ['dkv'], categories: ['all'] },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1alpha1',
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
            { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
            { name: 'Status', type: 'string', jsonPath: ".status.conditions[?(@.type==\"Available\")].reason" },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              description: SCHEMA.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: toStructural(properties.apiVersion),
                kind: toStructural(properties.kind),
                metadata: { type: 'object' },
                spec: toStructural(properties.spec),
                status: toStructural(properties.status),
              },
              // Generated object names derive from metadata.name; these are the rules nameProblems() applies.
              'x-kubernetes-validations': [
                { rule: "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", message: 'metadata.name must be a DNS-1035 label: lower-case letters, digits and \'-\', starting with a letter' },
                { rule: `self.metadata.name.size() <= ${maxName}`, message: `metadata.name must be at most ${maxName} characters: longer names make generated object names exceed Kubernetes limits` },
              ],
            },
          },
        },
      ],
    },
  };
}
