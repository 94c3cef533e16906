/**
 * The DistributedKV toolkit as a library, for cdk8s apps of your own: the
 * construct that renders a DistributedKV (compose it in any Chart, next to
 * cdk8s-plus objects), the one-cluster chart and synthesis function that
 * `dkv synth` and the controller use, the validator, the configuration, the
 * CRD and the API's types. What it renders equals what `dkv synth` writes
 * for the same spec and configuration.
 *
 * @packageDocumentation
 */
export { DistributedKVCluster, type DistributedKVProps } from './constructs/distributed-kv.js';
export { DistributedKVChart, synthesizeCluster, type SynthesisOptions } from './constructs/synthesize.js';
export { validateDistributedKV, API_GROUP, API_VERSION, KIND, type ValidResource, type ValidationResult } from './api/validate.js';
export type { FieldProblem } from './api/schema-errors.js';
export { loadConfig, loadDefaultConfig, type GeneratorConfig, type CertManagerIssuerRef, type ContainerResources, type ResourceQuantity, type EngineName, type JsonPatchOperation, type PatchableKind } from './api/config.js';
export { customResourceDefinition, CRD_NAME, PLURAL } from './api/crd.js';
export { InputError, InvalidConfigError, formatProblem, type Problem } from './api/problem.js';
export type { MembershipPlan } from './engines/engine.js';
export type { KubeObject } from './model/kube-object.js';
export type { ClusterIdentity } from './model/cluster-identity.js';
export type { LiveTls, TlsInEffect, TlsMode } from './model/tls.js';
export type { LabelSelector, LabelSelectorRequirement } from './model/label-selector.js';
export type { DistributedKV, DistributedKVSpec, DistributedKVStatus, Condition, GeneratedObject, ObjectMeta } from './imports/distributedkv.js';
