// A jest reporter that writes the run's totals to DKV_TEST_SUMMARY (if set),
// so .ci/run can print the one plain `N passed, N failed` line CI reads, and
// each file's wall time, which `npm test` (lib/scripts/test-lanes.js) ranks.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

export default class SummaryReporter {
  onRunComplete(_contexts, results) {
    const file = process.env.DKV_TEST_SUMMARY;
    if (!file) return;
    const failedSuites = results.testResults.filter((r) => r.testExecError).length;
    writeFileSync(file, JSON.stringify({
      passed: results.numPassedTests,
      failed: results.numFailedTests + failedSuites + (results.runExecError ? 1 : 0),
      skipped: results.numPendingTests + results.numTodoTests,
      files: results.testResults.map((r) => ({
        path: relative(process.cwd(), r.testFilePath),
        ms: r.perfStats.end - r.perfStats.start,
        failed: r.numFailingTests + (r.testExecError ? 1 : 0),
      })),
    }));
  }
}
