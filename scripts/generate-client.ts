/**
 * Generates a third-party TypeScript client from the committed spec with @hey-api/openapi-ts (test/support/generated-client.ts),
 * into test/.generated/hey-api/ (gitignored) or the directory named.
 *
 *   bun run client:generate [output-dir]
 */
import { resolve } from "node:path";
import { CLIENT_DIR, generateClient } from "../test/support/generated-client.ts";

const output = process.argv[2] ? resolve(process.argv[2]) : CLIENT_DIR;
await generateClient(output);
console.log(`wrote the @hey-api/openapi-ts client to ${output}`);
