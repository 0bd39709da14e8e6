// Runs once before the test files. Building the PGlite template (seconds) happens once here. (A default
// timeout set here reaches only the first file, so each file that needs more than 5 s sets its own.)
import { warmTemplate } from "./harness.ts";

await warmTemplate();
