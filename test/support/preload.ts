// Runs once before the test files (bun's preload). The test databases' server (an embedded PostgreSQL, or
// TEST_DATABASE_URL's) and the template every test context copies are prepared here, once per run, and torn
// down after the last file; tests that start servers or databases get more than bun's default 5 s on a busy
// 2-core machine. After the last file, the run's whole service log is searched for secrets (log-scan.ts).
import { afterAll, setDefaultTimeout } from "bun:test";
import { closeSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { startTestDatabases, stopTestDatabases, testLog } from "./harness.ts";
import { findSecrets, secretLiterals } from "./log-scan.ts";

setDefaultTimeout(60_000);
await startTestDatabases();
afterAll(stopTestDatabases);

afterAll(() => {
  closeSync(testLog.fd);
  const text = readFileSync(testLog.file, "utf8");
  const findings = findSecrets(text, secretLiterals(join(import.meta.dir, "..")));
  const lines = text.split("\n").length - 1;
  if (findings.length > 0) {
    const shown = findings.slice(0, 10).map((f) => `  line ${f.line}: ${f.what}: …${f.excerpt}…`);
    throw new Error(`The service logged secrets (${findings.length} findings in ${lines} lines, kept in ${testLog.file}):\n${shown.join("\n")}`);
  }
  console.log(`log scan: ${lines} lines the service logged in this run, no secret in them`);
  rmSync(testLog.file, { force: true });
});
