// Builds the PGlite template once before any test file runs: creating a database takes seconds,
// longer than a hook's default time limit on a busy machine.
import { warmTemplate } from "./harness.ts";

await warmTemplate();
