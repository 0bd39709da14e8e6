/**
 * The configuration's documentation, written from the environment schema (test/support/config-docs.ts renders it):
 * the table of docs/configuration.md and deploy/image-host.env.
 *
 *   bun run docs:config            writes both
 *   bun run docs:config --check    writes nothing; exits 1 naming each file that differs from what it would write
 */
import { join } from "node:path";
import { CONFIG_DOC, ENV_FILE, staleConfigDocs, writeConfigDocs } from "../test/support/config-docs.ts";

const root = join(import.meta.dir, "..");
if (process.argv.includes("--check")) {
  const stale = staleConfigDocs(root);
  if (stale.length > 0) {
    for (const file of stale) console.error(`${file} does not match src/env.ts: run bun run docs:config`);
    process.exit(1);
  }
  console.log(`${CONFIG_DOC} and ${ENV_FILE} match src/env.ts`);
} else {
  const changed = writeConfigDocs(root);
  console.log(changed.length ? `wrote ${changed.join(" and ")}` : `${CONFIG_DOC} and ${ENV_FILE} were already up to date`);
}
