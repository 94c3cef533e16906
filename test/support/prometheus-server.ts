/**
 * A real Prometheus server for a test: the binary test/cluster/prometheus/build.sh
 * builds (`build.sh prometheus`), run with the configuration the test gives
 * (scrape jobs, rule files), its data and log in a directory of the test's,
 * listening on a free loopback port. Read through its HTTP API, as Grafana
 * and Alertmanager would: instant queries and the alerts its rules hold.
 */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { exitDescription, freePort, launch, terminate } from '../cluster/control-plane.js';
import { eventually } from './eventually.js';

/** One series of an instant query's result. */
export interface Sample {
  readonly metric: Record<string, string>;
  /** [unix seconds, value as Prometheus writes it: "1", "NaN", "+Inf"]. */
  readonly value: [number, string];
}

/** An alert as /api/v1/alerts lists it: only pending and firing ones are listed. */
export interface ActiveAlert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: 'pending' | 'firing';
  readonly activeAt: string;
  readonly value: string;
}

export class PrometheusServer {
  private constructor(
    readonly url: string,
    private readonly process: ChildProcess,
    /** Its log: Prometheus' own messages (config errors, rule evaluation failures). */
    readonly logFile: string,
  ) {}

  /** Writes `config` as prometheus.yml into `dir`, starts the server on it and waits until it is ready. */
  static async start(binary: string, dir: string, config: Record<string, unknown>): Promise<PrometheusServer> {
    const configFile = join(dir, 'prometheus.yml');
    writeFileSync(configFile, stringify(config, { lineWidth: 0 }));
    const port = await freePort();
    const logFile = join(dir, 'prometheus.log');
    const child = launch(binary, [
      `--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`,
    ], logFile);
    const server = new PrometheusServer(`http://127.0.0.1:${port}`, child, logFile);
    await eventually('Prometheus to be ready', async () => ((await fetch(`${server.url}/-/ready`)).status === 200 ? true : undefined),
      60_000, 100, () => exitDescription(child, logFile));
    return server;
  }

  /** An instant query (now); throws with Prometheus' error when the query is refused. */
  async query(expr: string): Promise<Sample[]> {
    const body = await this.api(`/api/v1/query?query=${encodeURIComponent(expr)}`);
    if (body.data.resultType !== 'vector') throw new Error(`${expr}: a ${body.data.resultType}, not an instant vector`);
    return body.data.result;
  }

  /** The alerts pending or firing now. */
  async alerts(): Promise<ActiveAlert[]> {
    return (await this.api('/api/v1/alerts')).data.alerts;
  }

  /** The rules it loaded, each with its health (`ok`, `err`, `unknown` before the first evaluation) and last error. */
  async rules(): Promise<{ name: string; health: string; lastError?: string }[]> {
    return (await this.api('/api/v1/rules')).data.groups.flatMap((g: any) => g.rules.map((r: any) => ({ name: r.name, health: r.health, lastError: r.lastError })));
  }

  /** Why the server is gone, if it is. */
  exited(): string | undefined {
    return exitDescription(this.process, this.logFile);
  }

  async stop(): Promise<void> {
    await terminate(this.process);
  }

  private async api(path: string): Promise<any> {
    const response = await fetch(`${this.url}${path}`);
    const body = (await response.json()) as any;
    if (body.status !== 'success') throw new Error(`${path}: ${body.errorType}: ${body.error}`);
    return body;
  }
}
