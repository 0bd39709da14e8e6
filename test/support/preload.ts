// Runs once before the test files (bun's preload). The test databases' server (an embedded PostgreSQL, or
// TEST_DATABASE_URL's) and the template every test context copies are prepared here, once per run, and torn
// down after the last file; tests that start servers or databases get more than bun's default 5 s on a busy
// 2-core machine.
import { afterAll, setDefaultTimeout } from "bun:test";
import { startTestDatabases, stopTestDatabases } from "./harness.ts";

setDefaultTimeout(60_000);
await startTestDatabases();
afterAll(stopTestDatabases);
