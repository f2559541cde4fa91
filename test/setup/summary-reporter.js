// Ends the run with one plain line, "tests: N passed, N failed, N skipped", that any CI can read.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const { numPassedTests: passed, numFailedTests: failed, numPendingTests: skipped, numRuntimeErrorTestSuites: broken } = results;
    process.stdout.write(`\ntests: ${passed} passed, ${failed + broken} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
