/** The entry `bun run cli` runs (package.json); the CLI itself is in main.ts. */
import { runAsProcess } from "./main.ts";

export { main, type Env, type Io } from "./main.ts";

if (import.meta.main) await runAsProcess();
