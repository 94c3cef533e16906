/** The p-th percentile of ascending `sorted` (nearest rank, the lower one); NaN when empty. */
export const percentile = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
