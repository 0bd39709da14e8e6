// Runs before every test file. Building the PGlite template (seconds) happens once here, and tests
// that start servers or databases get more than bun's default 5 s on a busy 2-core machine.
import { setDefaultTimeout } from "bun:test";
import { warmTemplate } from "./harness.ts";

setDefaultTimeout(60_000);
await warmTemplate();
