/**
 * Generates a third-party TypeScript client from the committed spec with @hey-api/openapi-ts (fetch client,
 * types and SDK functions), into test/.generated/hey-api/ (gitignored). test/api/generated-client.test.ts calls
 * ensureClient(), which generates it when it is missing or was made from another version of the spec, then
 * type-checks the output and uses it against a real server. `bun run client:generate [output-dir]`
 * (scripts/generate-client.ts) generates it on demand.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createClient } from "@hey-api/openapi-ts";

const root = resolve(import.meta.dir, "..", "..");
export const SPEC_PATH = join(root, "openapi/openapi.json");
export const CLIENT_DIR = join(root, "test/.generated/hey-api");
/** Written last: the SHA-256 of the spec the client was generated from. */
const STAMP = ".spec-sha256";

const specHash = () => createHash("sha256").update(readFileSync(SPEC_PATH)).digest("hex");

export async function generateClient(output = CLIENT_DIR) {
  const hash = specHash();
  rmSync(output, { recursive: true, force: true });
  await createClient({
    input: SPEC_PATH,
    output: { path: output, clean: true },
    plugins: ["@hey-api/client-fetch", "@hey-api/typescript", "@hey-api/sdk"],
    logs: { level: "silent" },
  });
  for (const file of ["index.ts", "sdk.gen.ts", "types.gen.ts", "client/index.ts"]) {
    if (!existsSync(join(output, file))) throw new Error(`@hey-api/openapi-ts wrote no ${file} in ${output}`);
  }
  writeFileSync(join(output, STAMP), `${hash}\n`);
  return output;
}

/** Generates the client unless the one on disk was made from the current spec. Returns whether it generated. */
export async function ensureClient(output = CLIENT_DIR): Promise<boolean> {
  try {
    if (readFileSync(join(output, STAMP), "utf8").trim() === specHash()) return false;
  } catch {}
  await generateClient(output);
  return true;
}
