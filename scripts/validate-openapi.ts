/**
 * Validates the committed OpenAPI documents against the official OpenAPI JSON Schemas, as shipped by
 * @seriousme/openapi-schema-validator (3.0: spec.openapis.org/oas/3.0/schema/2021-09-28, draft-04;
 * 3.1: spec.openapis.org/oas/3.1/schema, 2020-12), which also checks that every internal $ref resolves.
 * The 3.1 schema does not look inside Schema Objects, so each one of the 3.1 document is also checked against
 * the JSON Schema 2020-12 meta-schema (the base of OpenAPI 3.1's dialect).
 *
 *   bun run validate:openapi             # openapi/openapi.json (3.1) and openapi/openapi-3.0.json (3.0)
 *   bun run validate:openapi FILE...     # other documents; the version is read from each
 *
 * Prints every error found and exits 1 when any document is invalid.
 */
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";

const root = join(import.meta.dir, "..");
const committed: [file: string, version: string][] = [
  ["openapi/openapi.json", "3.1"],
  ["openapi/openapi-3.0.json", "3.0"],
];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const escape = (key: string) => key.replace(/~/g, "~0").replace(/\//g, "~1");

/** The top-level Schema Objects of a document: components.schemas and every `schema` outside examples. */
function schemaObjects(doc: unknown): [pointer: string, schema: unknown][] {
  const found: [string, unknown][] = [];
  const walk = (node: unknown, at: string) => {
    if (Array.isArray(node)) return node.forEach((v, i) => walk(v, `${at}/${i}`));
    if (!isObj(node)) return;
    for (const [k, v] of Object.entries(node)) {
      const here = `${at}/${escape(k)}`;
      if (k === "example" || k === "examples" || k.startsWith("x-")) continue;
      if (k === "schema") found.push([here, v]);
      else if (k === "schemas" && at === "#/components" && isObj(v)) {
        for (const [name, s] of Object.entries(v)) found.push([`${here}/${escape(name)}`, s]);
      } else walk(v, here);
    }
  };
  walk(doc, "#");
  return found;
}

async function validate(file: string, expected?: string): Promise<{ version?: string; errors: string[] }> {
  let doc: Obj;
  try {
    doc = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    return { errors: [`cannot read: ${(err as Error).message}`] };
  }
  const validator = new Validator({ allErrors: true });
  const result = await validator.validate(doc);
  const errors: string[] = [];
  if (expected && validator.version !== expected) {
    errors.push(`openapi is ${JSON.stringify(doc.openapi)}, expected ${expected}.x`);
  }
  if (!result.valid) {
    if (typeof result.errors === "string") errors.push(result.errors);
    else {
      // a broken Schema Object also fails the Reference branch of every `oneOf: [Schema, Reference]` above it:
      // leave out those consequences when a more specific error explains them
      const all = result.errors ?? [];
      const consequence = (e: (typeof all)[number]) =>
        e.keyword === "oneOf" || e.keyword === "anyOf" || (e.keyword === "required" && e.params.missingProperty === "$ref");
      const shown = all.filter((e) => !consequence(e) || !all.some((f) => !consequence(f) && f.instancePath.startsWith(e.instancePath)));
      for (const e of shown) {
        errors.push(`#${e.instancePath} ${e.message}${Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ""} (${e.schemaPath})`);
      }
    }
  }
  if (validator.version === "3.1") {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    for (const [pointer, schema] of schemaObjects(doc)) {
      if (ajv.validateSchema(schema as object) !== true) {
        for (const e of ajv.errors ?? []) errors.push(`${pointer}${e.instancePath} ${e.message} (JSON Schema 2020-12 meta-schema)`);
      }
    }
  }
  return { version: validator.version, errors };
}

const files: [string, string | undefined][] =
  process.argv.length > 2 ? process.argv.slice(2).map((f) => [f, undefined]) : committed.map(([f, v]) => [join(root, f), v]);
let failed = 0;
for (const [file, expected] of files) {
  const { version, errors } = await validate(file, expected);
  const name = relative(process.cwd(), file) || file;
  if (errors.length === 0) {
    console.log(`${name}: valid OpenAPI ${version} (official schema${version === "3.1" ? " + JSON Schema 2020-12 meta-schema" : ""})`);
    continue;
  }
  failed++;
  console.error(`${name}: ${errors.length} error(s)`);
  for (const e of errors) console.error(`  ${e}`);
}
if (failed > 0) {
  console.error(`${failed} of ${files.length} OpenAPI document(s) invalid`);
  process.exit(1);
}
