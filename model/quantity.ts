/** Kubernetes resource quantities (`10Gi`, `1500m`, `2e3`), as numbers to compare. */
const QUANTITY = /^([+-]?[0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$/;
const FACTORS: Record<string, number> = { m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

/** The quantity's value, or undefined when it is not one. */
export function quantityValue(quantity: string | number): number | undefined {
  const m = QUANTITY.exec(String(quantity));
  if (!m) return undefined;
  return Number(m[1]) * (m[2] && /^[eE]/.test(m[2]) ? 10 ** Number(m[2].slice(1)) : FACTORS[m[2] ?? '']);
}
