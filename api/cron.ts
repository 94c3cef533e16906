/**
 * What the schema's cron pattern cannot say: a range must not run backwards.
 * The pattern already bounds every value, so `5-3` (which Kubernetes' cron
 * parser rejects) is the one mistake left. The API server accepts it in a
 * DistributedKV (it cannot parse cron), so the generator reports it instead.
 */
const NAMES: Record<string, number> = Object.fromEntries([
  ...['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].map((m, i) => [m, i + 1]),
  ...['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'].map((d, i) => [d, i]),
]);
const FIELDS = ['minute', 'hour', 'day-of-month', 'month', 'day-of-week'];

function valueOf(token: string): number {
  return NAMES[token.toLowerCase()] ?? Number(token);
}

export function cronProblems(schedule: string): string[] {
  if (schedule.startsWith('@')) return [];
  const problems: string[] = [];
  schedule.trim().split(/ +/).forEach((field, i) => {
    for (const item of field.split(',')) {
      const range = item.split('/')[0];
      const [from, to] = range.split('-');
      if (to !== undefined && valueOf(from) > valueOf(to)) {
        problems.push(`${FIELDS[i]} range ${range} runs backwards (got ${JSON.stringify(schedule)})`);
      }
    }
  });
  return problems;
}
