import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/**
 * Validates a response against the committed spec: the schema documented for its operation and status.
 * An undocumented status, or a body that does not fit, is an error — a handler cannot drift silently.
 */
const spec = JSON.parse(readFileSync(join(import.meta.dir, "../../openapi/openapi.json"), "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(spec, "spec.json");

const operations = Object.entries(spec.paths as Record<string, Record<string, unknown>>).flatMap(([template, item]) =>
  Object.keys(item).map((method) => ({
    method: method.toUpperCase(),
    template,
    regex: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
  })),
);

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");
const validators = new Map<string, ReturnType<typeof ajv.compile>>();

export function checkAgainstSpec(method: string, pathname: string, status: number, contentType: string | null, body: unknown) {
  const candidates = operations.filter((o) => o.method === (method === "HEAD" ? "GET" : method) && o.regex.test(pathname));
  // a literal path beats a template (/images/tokens vs /images/{key})
  const op = candidates.find((o) => !o.template.includes("{")) ?? candidates[0];
  if (!op) return; // not an API operation (served files, docs, unknown routes)
  const responses = spec.paths[op.template][op.method.toLowerCase()].responses;
  if (!responses[String(status)]) {
    throw new Error(`${method} ${pathname} answered ${status}, which the spec does not document for ${op.template}`);
  }
  const documented = Object.keys(responses[String(status)].content ?? {});
  if (documented.length === 0) return; // documented without a body (a redirect)
  if (!contentType?.includes("application/json")) {
    // a documented answer in another type (the Chevereto dialect's format=txt) is a string: nothing more to check
    if (documented.some((type) => type !== "application/json" && contentType?.startsWith(type))) return;
    throw new Error(`${method} ${pathname} answered ${status} with ${contentType}, not JSON`);
  }
  const key = `${op.template} ${op.method} ${status}`;
  let validate = validators.get(key);
  if (!validate) {
    const ref = `spec.json#/${pointer("paths", op.template, op.method.toLowerCase(), "responses", String(status), "content", "application/json", "schema")}`;
    validate = ajv.compile({ $ref: ref });
    validators.set(key, validate);
  }
  if (!validate(body)) {
    throw new Error(
      `${method} ${pathname} ${status} does not match its documented schema: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
    );
  }
}
