/**
 * The part of Grafana's dashboard JSON model (schemaVersion 39, Grafana 10
 * and later) the DistributedKV dashboard uses, and the layout that places
 * its panels: rows of panels, each row's panels side by side on Grafana's
 * 24-column grid. Typed here, small, so that a panel without a query or a
 * position is a compile error rather than a blank square in Grafana.
 */

/** Grafana's grid is 24 columns wide. */
export const GRID_COLUMNS = 24;

/** The Prometheus data source every query runs on: the dashboard's `datasource` variable. */
export const PROMETHEUS_DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;

export interface GridPos {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

/** One PromQL query of a panel. */
export interface PrometheusTarget {
  readonly refId: string;
  readonly expr: string;
  /** How a series is named in the legend (`{{pod}}`). */
  readonly legendFormat?: string;
  /** One value at the dashboard's end time (tables, stats), not a range. */
  readonly instant?: boolean;
  readonly range?: boolean;
  readonly format?: 'time_series' | 'table';
  readonly datasource: typeof PROMETHEUS_DATASOURCE;
}

export interface Threshold {
  readonly color: string;
  readonly value: number | null;
}

export interface QueryPanel {
  readonly id: number;
  readonly type: 'timeseries' | 'stat' | 'bargauge' | 'table' | 'state-timeline';
  readonly title: string;
  readonly description: string;
  readonly datasource: typeof PROMETHEUS_DATASOURCE;
  readonly gridPos: GridPos;
  readonly targets: readonly PrometheusTarget[];
  readonly fieldConfig: { readonly defaults: Record<string, unknown>; readonly overrides: readonly unknown[] };
  readonly options: Record<string, unknown>;
}

/** A row: a heading that groups the panels below it (it has no query). */
export interface RowPanel {
  readonly id: number;
  readonly type: 'row';
  readonly title: string;
  readonly collapsed: false;
  readonly gridPos: GridPos;
  readonly panels: readonly [];
}

export type Panel = QueryPanel | RowPanel;

/** A template variable: the data source, or a set of label values from a query. */
export interface TemplateVariable {
  readonly name: string;
  readonly label: string;
  readonly type: 'datasource' | 'query';
  readonly [field: string]: unknown;
}

export interface Dashboard {
  readonly uid: string;
  readonly title: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly schemaVersion: number;
  readonly version: number;
  readonly editable: boolean;
  readonly graphTooltip: number;
  readonly refresh: string;
  readonly time: { readonly from: string; readonly to: string };
  readonly timezone: string;
  readonly annotations: { readonly list: readonly unknown[] };
  readonly links: readonly unknown[];
  readonly templating: { readonly list: readonly TemplateVariable[] };
  readonly panels: readonly Panel[];
}

/** What a panel shows, before it is placed: the layout gives it an id and a position. */
export interface PanelSpec {
  readonly type: QueryPanel['type'];
  readonly title: string;
  /** Shown as the panel's (i) tooltip: what to read from it. */
  readonly description: string;
  readonly queries: readonly QuerySpec[];
  /** Columns of the 24 the panel takes. @default 8 */
  readonly width?: number;
  /** Grafana's unit id (`bytes`, `s`, `percentunit`, `short`, `reqps`). @default short */
  readonly unit?: string;
  readonly min?: number;
  readonly max?: number;
  /** Ascending steps, the first from -Infinity (`value: null`). */
  readonly thresholds?: readonly Threshold[];
  /** Values mapped to text (a stat's 0 as `no leader`). */
  readonly mappings?: readonly unknown[];
  /** Stack the series of a time series panel (parts of one whole). */
  readonly stacked?: boolean;
}

export interface QuerySpec {
  readonly expr: string;
  readonly legend?: string;
  readonly instant?: boolean;
}

export interface RowSpec {
  readonly title: string;
  readonly panels: readonly PanelSpec[];
}

const PANEL_HEIGHT = 8;
const ROW_HEIGHT = 1;
const DEFAULT_WIDTH = 8;

/** A panel's field defaults and options by its type: what Grafana would otherwise fill in on load (and then show as a change). */
function fieldConfig(spec: PanelSpec): QueryPanel['fieldConfig'] {
  const defaults: Record<string, unknown> = {
    unit: spec.unit ?? 'short',
    ...(spec.min === undefined ? {} : { min: spec.min }),
    ...(spec.max === undefined ? {} : { max: spec.max }),
    thresholds: { mode: 'absolute', steps: spec.thresholds ?? [{ color: 'green', value: null }] },
    mappings: spec.mappings ?? [],
    color: { mode: spec.thresholds ? 'thresholds' : 'palette-classic' },
  };
  if (spec.type === 'timeseries') {
    defaults.custom = { drawStyle: 'line', lineWidth: 1, fillOpacity: spec.stacked ? 30 : 10, showPoints: 'never', spanNulls: false, stacking: { mode: spec.stacked ? 'normal' : 'none', group: 'A' } };
  }
  return { defaults, overrides: [] };
}

function options(spec: PanelSpec): Record<string, unknown> {
  switch (spec.type) {
    case 'timeseries':
      return { legend: { displayMode: 'list', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } };
    case 'stat':
      return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, colorMode: 'value', graphMode: 'area', justifyMode: 'auto', textMode: 'auto', orientation: 'auto' };
    case 'bargauge':
      return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, displayMode: 'gradient', orientation: 'horizontal', showUnfilled: true };
    case 'table':
      return { showHeader: true, cellHeight: 'sm', footer: { show: false, reducer: ['sum'], countRows: false } };
    case 'state-timeline':
      return { mergeValues: true, showValue: 'auto', alignValue: 'left', rowHeight: 0.9, legend: { displayMode: 'list', placement: 'bottom', showLegend: true } };
  }
}

/**
 * Places the rows top to bottom and each row's panels left to right,
 * wrapping at 24 columns, and numbers every panel (rows too) from 1 in
 * that order: the ids and positions follow from the order alone, so the
 * same rows always give the same JSON.
 */
export function layOut(rows: readonly RowSpec[]): Panel[] {
  const panels: Panel[] = [];
  let y = 0;
  for (const row of rows) {
    panels.push({ id: panels.length + 1, type: 'row', title: row.title, collapsed: false, gridPos: { x: 0, y, w: GRID_COLUMNS, h: ROW_HEIGHT }, panels: [] });
    y += ROW_HEIGHT;
    let x = 0;
    for (const spec of row.panels) {
      const w = spec.width ?? DEFAULT_WIDTH;
      if (w < 1 || w > GRID_COLUMNS) throw new Error(`panel ${JSON.stringify(spec.title)}: width ${w} is outside 1..${GRID_COLUMNS}`);
      if (x + w > GRID_COLUMNS) {
        x = 0;
        y += PANEL_HEIGHT;
      }
      panels.push({
        id: panels.length + 1,
        type: spec.type,
        title: spec.title,
        description: spec.description,
        datasource: PROMETHEUS_DATASOURCE,
        gridPos: { x, y, w, h: PANEL_HEIGHT },
        targets: spec.queries.map((q, i) => ({
          refId: String.fromCharCode(65 + i),
          expr: q.expr,
          ...(q.legend === undefined ? {} : { legendFormat: q.legend }),
          ...(q.instant ? { instant: true, range: false, format: spec.type === 'table' ? 'table' as const : 'time_series' as const } : { range: true }),
          datasource: PROMETHEUS_DATASOURCE,
        })),
        fieldConfig: fieldConfig(spec),
        options: options(spec),
      });
      x += w;
    }
    if (x > 0) y += PANEL_HEIGHT;
  }
  return panels;
}
