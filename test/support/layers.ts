/**
 * The layer check: every import in src/ points down (or sideways within its layer), never up. Run by
 * test/ops/layers.test.ts in-process and by `bun run check:layers` (scripts/check-layers.ts, which prints the list).
 *
 * Every import counts: static `import`/`export … from`, `import type`, dynamic `import()` and `typeof import()`
 * in types — a type-only import is still knowledge of the layer above. The layers, and why each file sits where it
 * does, are described in docs/architecture.md.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

/**
 * Higher may import lower or equal; "root" (the entry points and the app's assembly) may import anything. `cli` is
 * apart: a client of the API, it imports its own folder and the spec's generated types only (see `exceptions`).
 */
export const layerRank: Record<string, number> = {
  root: 8,
  routes: 7,
  web: 6,
  http: 5,
  cli: 5,
  services: 4,
  webhooks: 3,
  storage: 3,
  db: 2,
  images: 2,
  observability: 2,
  shared: 1, // the Deps type, the error type: importable by every layer, importing only the bottom layers' types
};

/** The layer of a file under src/ (path relative to src/, with forward slashes). */
export function layerOf(file: string): string {
  const top = file.split("/")[0];
  switch (top) {
    case "server.ts":
    case "app.ts":
    case "bootstrap.ts":
    case "env.ts": // the environment's schema: read by the entry points and the bootstrap only
      return "root";
    case "deps.ts":
    case "errors.ts":
      return "shared";
  }
  if (top in layerRank && !top.endsWith(".ts")) return top;
  throw new Error(`src/${file}: no layer for this file; name one in test/support/layers.ts and docs/architecture.md`);
}

/**
 * The imports allowed although the layers alone would refuse them, each with its reason (paths relative to src/;
 * docs/architecture.md lists them too). Keep this list short: a new entry needs a reason a reader accepts.
 */
export const exceptions: { from: string; to: string; why: string }[] = [
  { from: "cli/commands/backup.ts", to: "env.ts", why: "backup create/restore work on a stopped server's DATA_DIR: no API to call" },
  { from: "cli/commands/backup.ts", to: "services/backup/index.ts", why: "backup create/restore work on a stopped server's DATA_DIR: no API to call" },
  { from: "cli/commands/database.ts", to: "env.ts", why: "database move works on a stopped server's DATA_DIR: no API to call" },
  { from: "cli/commands/database.ts", to: "services/backup/index.ts", why: "database move works on a stopped server's DATA_DIR: no API to call" },
  { from: "cli/commands/import.ts", to: "env.ts", why: "import lsky reads a foreign database and files into DATA_DIR / DATABASE_URL: no API to call" },
  {
    from: "cli/commands/import.ts",
    to: "services/import/lsky/index.ts",
    why: "import lsky reads a foreign database and files into DATA_DIR / DATABASE_URL: no API to call",
  },
  {
    from: "cli/commands/storage.ts",
    to: "services/reconcile/names.ts",
    why: "the quarantine's folder and days, printed in the help; the API does not report them",
  },
];

/** Files outside src/ that src/ may name: the package's own version, and (for the CLI only) the spec's types. */
function outsideAllowed(i: Import, fromLayer: string): boolean {
  if (i.to === "../package.json") return true;
  return fromLayer === "cli" && i.to === "../openapi/schema" && i.typeOnly;
}

/**
 * Whether an import that runs up is nevertheless allowed: a listed exception, or a shared file's type-only import
 * (Deps names the database, the storage registry, the logger… — types, so nothing of those layers runs).
 */
export function allowed(i: Import, fromLayer: string): boolean {
  if (exceptions.some((e) => e.from === i.from && e.to === i.to)) return true;
  return fromLayer === "shared" && i.typeOnly;
}

/**
 * Files that only some layers may import, whatever their rank. Events are written by services and only by them
 * (the outbox's writer is in webhooks/, below services, but no repository, route or page may call it).
 */
export const restricted: Record<string, { to: string[]; why: string }> = {
  "webhooks/events.ts": { to: ["services", "webhooks"], why: "events are emitted by services only" },
};

export interface Import {
  from: string; // relative to src/
  to: string; // relative to src/, or "../…" when it leaves src/
  specifier: string;
  typeOnly: boolean;
  line: number;
}

export interface Violation extends Import {
  fromLayer: string;
  toLayer: string;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (/\.(ts|tsx)$/.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** Every module specifier a file names, with whether the import is type-only. */
export function importsOf(path: string, text = readFileSync(path, "utf8")): { specifier: string; typeOnly: boolean; line: number }[] {
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, path.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: { specifier: string; typeOnly: boolean; line: number }[] = [];
  const add = (node: ts.Node, literal: ts.Node | undefined, typeOnly: boolean) => {
    if (literal && ts.isStringLiteralLike(literal)) {
      found.push({ specifier: literal.text, typeOnly, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1 });
    }
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const typeOnly =
        !!clause &&
        (clause.isTypeOnly ||
          (!clause.name &&
            !!clause.namedBindings &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      add(node, node.moduleSpecifier, typeOnly);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      add(node, node.moduleSpecifier, node.isTypeOnly);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0], false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every import between files of src/ (and out of it), relative to src/. */
export function sourceImports(src: string): Import[] {
  const root = resolve(src);
  const out: Import[] = [];
  for (const path of filesUnder(root)) {
    const from = relative(root, path).split("\\").join("/");
    for (const { specifier, typeOnly, line } of importsOf(path)) {
      if (!specifier.startsWith(".")) continue; // a package
      const to = relative(root, resolve(dirname(path), specifier))
        .split("\\")
        .join("/");
      out.push({ from, to, specifier, typeOnly, line });
    }
  }
  return out;
}

/** The imports of src/ that run up a layer (or out of src/ altogether). */
export function checkLayers(src: string): Violation[] {
  const violations: Violation[] = [];
  for (const i of sourceImports(src)) {
    const fromLayer = layerOf(i.from);
    if (i.to.startsWith("..")) {
      if (!outsideAllowed(i, fromLayer)) violations.push({ ...i, fromLayer, toLayer: "outside src/" });
      continue;
    }
    const toLayer = layerOf(i.to);
    if (fromLayer === "cli" && toLayer !== "cli") {
      if (!allowed(i, fromLayer)) violations.push({ ...i, fromLayer, toLayer });
      continue;
    }
    const rule = restricted[i.to];
    if (rule && !rule.to.includes(fromLayer)) {
      violations.push({ ...i, fromLayer, toLayer: `${toLayer}: ${rule.why}` });
      continue;
    }
    if (layerRank[toLayer] > layerRank[fromLayer] && !allowed(i, fromLayer)) violations.push({ ...i, fromLayer, toLayer });
  }
  return violations;
}

export function describe(v: Violation): string {
  return `src/${v.from}:${v.line} (${v.fromLayer}) → ${v.specifier} (${v.toLayer})${v.typeOnly ? " [type-only]" : ""}`;
}
