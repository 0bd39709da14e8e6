/**
 * Writes the committed OpenAPI documents and the generated types from the route definitions:
 *   openapi/openapi.json      3.1, for people and type generation (served at /api/v1/openapi.json)
 *   openapi/openapi-3.0.json  3.0, for tools that need it (Dredd)
 *   openapi/schema.d.ts       openapi-typescript types, used by the tests as their client
 * With --check, writes nothing and exits 1 when any of them is stale.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { OpenAPIHono } from "@hono/zod-openapi";
import openapiTS, { astToString } from "openapi-typescript";
import { buildDocument } from "../src/app.ts";
import type { AppEnv } from "../src/http/types.ts";
import { routesOnly } from "../src/routes/index.ts";

export const SPEC_SERVER = "http://localhost:3000";
const dir = join(import.meta.dir, "../openapi");

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Obj = { [key: string]: Json };
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const child = (v: Json | undefined, key: string | number): Json | undefined =>
  Array.isArray(v) && typeof key === "number" ? v[key] : isObj(v) && typeof key === "string" ? v[key] : undefined;
const isBareNullable = (v: unknown) => isObj(v) && Object.keys(v).length === 1 && v.nullable === true;
/** 3.1 schemas that admit null and nothing else. */
const isNullOnly = (s: Obj) =>
  s.type === "null" ||
  (Array.isArray(s.type) && s.type.length > 0 && s.type.every((t) => t === "null")) ||
  ("const" in s && s.const === null) ||
  (Array.isArray(s.enum) && s.enum.length > 0 && s.enum.every((v) => v === null));

/**
 * OpenAPI 3.0 form of one Schema Object written by zod-openapi's 3.0 generator, which passes some 3.1-isms through
 * (from `.openapi({...})` metadata) and writes `z.null()` and `z.unknown()` alike as `{nullable: true}`, a `nullable`
 * without `type` that checks nothing and is a lint error. `of31` is the same node in the 3.1 document, which tells
 * the two apart (`{type: "null"}` there, or no type at all).
 *   - `type: [T, "null"]` -> `type: T, nullable: true`; `type: "null"`, `const: null`, a null-only `nullable`
 *     -> the nullable enum of null `{type: "object", nullable: true, enum: [null]}` (3.0.3's way to say "only null")
 *   - `nullable` without `type` on anything else -> dropped: a schema without `type` already admits null
 *   - `allOf: [X, null]` (a nullable $ref) -> `oneOf`, as in 3.1: `nullable` does not reach through `allOf`
 *   - `const: v` -> `enum: [v]`; `examples: [v, ...]` -> `example: v`;
 *     numeric `exclusiveMinimum`/`exclusiveMaximum` -> `minimum`/`maximum` with the boolean form
 * Anything 3.0 cannot say (a type array of two non-null types) throws; what is left over is caught by
 * scripts/validate-openapi.ts against the official 3.0 schema.
 */
function schema30(input: Json, of31: Json | undefined, at: string, position?: string): Json {
  if (!isObj(input) || "$ref" in input) return input;
  const s: Obj = { ...input };
  const o = isObj(of31) ? of31 : undefined;

  if (Array.isArray(s.type)) {
    const types = s.type.filter((t) => t !== "null");
    if (types.length > 1) throw new Error(`${at}: type ${JSON.stringify(s.type)} has no OpenAPI 3.0 form`);
    if (types.length === 1) {
      if (types.length < s.type.length) s.nullable = true;
      s.type = types[0] as Json;
    } else s.type = "null";
  }
  if ("const" in s) {
    s.enum = [s.const];
    delete s.const;
  }
  if (Array.isArray(s.examples)) {
    if (!("example" in s) && s.examples.length > 0) s.example = s.examples[0] as Json;
    delete s.examples;
  }
  for (const [exclusive, bound, stricter] of [
    ["exclusiveMinimum", "minimum", (a: number, b: number) => a >= b],
    ["exclusiveMaximum", "maximum", (a: number, b: number) => a <= b],
  ] as const) {
    const limit = s[exclusive];
    if (typeof limit !== "number") continue;
    const other = s[bound];
    if (typeof other === "number" && !stricter(limit, other)) delete s[exclusive];
    else {
      s[bound] = limit;
      s[exclusive] = true;
    }
  }
  if (Array.isArray(s.allOf) && s.allOf.some(isBareNullable)) {
    s.oneOf = s.allOf;
    delete s.allOf;
  }

  const onlyNull =
    s.type === "null" ||
    (Array.isArray(s.enum) && s.enum.length > 0 && s.enum.every((v) => v === null) && s.type === undefined) ||
    (s.nullable === true && s.type === undefined && (o ? isNullOnly(o) : isBareNullable(input) && position !== "additionalProperties" && position !== "items"));
  if (onlyNull) {
    const { type: _t, nullable: _n, enum: _e, ...rest } = s;
    return { type: "object", nullable: true, enum: [null], ...rest };
  }
  if (s.nullable === true && s.type === undefined && !Array.isArray(s.enum)) delete s.nullable;

  for (const key of ["allOf", "anyOf", "oneOf"]) {
    const list = s[key];
    if (Array.isArray(list)) s[key] = list.map((v, i) => schema30(v, child(child(o, key), i), `${at}/${key}/${i}`, key));
  }
  if (isObj(s.properties)) {
    const props = s.properties;
    s.properties = Object.fromEntries(
      Object.entries(props).map(([k, v]) => [k, schema30(v, child(child(o, "properties"), k), `${at}/properties/${k}`, "properties")]),
    );
  }
  for (const key of ["items", "not", "additionalProperties"]) {
    if (isObj(s[key])) s[key] = schema30(s[key], child(o, key), `${at}/${key}`, key);
  }
  return s;
}

/**
 * The 3.0 document with every Schema Object passed through schema30: those under components.schemas and every
 * `schema` of a parameter, header or media type. Examples (`example`, `examples`) are data and left alone.
 */
export function toOpenAPI30(doc30: unknown, doc31: unknown): Obj {
  const walk = (node: Json, of31: Json | undefined, at: string): Json => {
    if (Array.isArray(node)) return node.map((v, i) => walk(v, child(of31, i), `${at}/${i}`));
    if (!isObj(node)) return node;
    return Object.fromEntries(
      Object.entries(node).map(([k, v]) => {
        const here = `${at}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`;
        if (k === "example" || k === "examples" || k.startsWith("x-")) return [k, v];
        if (k === "schema") return [k, schema30(v, child(of31, k), here)];
        if (k === "schemas" && at === "#/components" && isObj(v)) {
          return [k, Object.fromEntries(Object.entries(v).map(([n, s]) => [n, schema30(s, child(child(of31, k), n), `${here}/${n}`)]))];
        }
        return [k, walk(v, child(of31, k), here)];
      }),
    );
  };
  return walk(doc30 as Json, doc31 as Json, "#") as Obj;
}

export async function generate(): Promise<Record<string, string>> {
  const doc31 = buildDocument(routesOnly(new OpenAPIHono<AppEnv>()), SPEC_SERVER, "3.1");
  const doc30 = toOpenAPI30(buildDocument(routesOnly(new OpenAPIHono<AppEnv>()), SPEC_SERVER, "3.0"), doc31);
  const types = astToString(await openapiTS(doc31 as never));
  return {
    "openapi.json": `${JSON.stringify(doc31, null, 2)}\n`,
    "openapi-3.0.json": `${JSON.stringify(doc30, null, 2)}\n`,
    "schema.d.ts": `// Generated by scripts/openapi.ts from the route definitions. Do not edit.\n${types}`,
  };
}

if (import.meta.main) {
  const files = await generate();
  if (process.argv.includes("--check")) {
    const stale = Object.entries(files).filter(([name, content]) => {
      try {
        return readFileSync(join(dir, name), "utf8") !== content;
      } catch {
        return true;
      }
    });
    if (stale.length > 0) {
      console.error(`openapi/ is stale: ${stale.map(([n]) => n).join(", ")}. Run 'bun run openapi' and commit.`);
      process.exit(1);
    }
    console.log("openapi/ is up to date");
  } else {
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    console.log(
      `wrote ${Object.keys(files)
        .map((n) => `openapi/${n}`)
        .join(", ")}`,
    );
  }
}
