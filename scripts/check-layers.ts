/**
 * The layer check (test/support/layers.ts): every import in src/ points down (or sideways within its layer), never up.
 *
 *   bun run check:layers               prints each file → import that runs up a layer, exit 1 if any
 *   bun scripts/check-layers.ts DIR    the same for another tree laid out like src/
 */
import { join } from "node:path";
import { checkLayers, describe } from "../test/support/layers.ts";

// another tree may be named (the layer test checks a small one); src/ by default
const violations = checkLayers(process.argv[2] ?? join(import.meta.dir, "..", "src"));
if (violations.length === 0) {
  console.log("layers: every import in src/ runs down or sideways");
} else {
  for (const v of violations) console.error(describe(v));
  console.error(`\n${violations.length} import(s) run up a layer. The layers: docs/architecture.md.`);
  process.exit(1);
}
