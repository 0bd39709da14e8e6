/**
 * The configuration's documentation, written from the environment schema (src/env.ts: `envShape` and `envDocs`):
 * the table of docs/configuration.md, between its marker comments, and deploy/image-host.env.
 *
 * `bun run docs:config` (scripts/config-docs.ts) writes both, or with --check names each file that differs;
 * test/ops/config-docs.test.ts runs the same check in-process.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { envDocs, envShape, otherVariableDocs, type VariableDoc } from "../../src/env.ts";

export const CONFIG_DOC = "docs/configuration.md";
export const ENV_FILE = "deploy/image-host.env";
export const BEGIN = "<!-- BEGIN GENERATED: the variables, from src/env.ts (bun run docs:config) -->";
export const END = "<!-- END GENERATED -->";

interface Variable extends VariableDoc {
  name: string;
  /** The default, in Markdown. */
  shownDefault: string;
}

/** The schema's defaults: what parsing an empty environment gives. */
function schemaDefaults(): Record<string, unknown> {
  return envShape.parse({}) as Record<string, unknown>;
}

function variables(): { schema: Variable[]; other: Variable[] } {
  const defaults = schemaDefaults();
  const schemaNames = Object.keys(envShape.shape);
  const documented = Object.keys(envDocs);
  const missing = schemaNames.filter((n) => !documented.includes(n));
  const extra = documented.filter((n) => !schemaNames.includes(n));
  if (missing.length || extra.length)
    throw new Error(
      `src/env.ts: envDocs must describe exactly the schema's variables (missing: ${missing.join(", ") || "none"}; not in the schema: ${extra.join(", ") || "none"})`,
    );
  const shown = (name: string, doc: VariableDoc) => doc.default ?? (defaults[name] === undefined ? "—" : `\`${String(defaults[name])}\``);
  return {
    schema: Object.entries(envDocs).map(([name, doc]) => ({ ...(doc as VariableDoc), name, shownDefault: shown(name, doc as VariableDoc) })),
    other: Object.entries(otherVariableDocs).map(([name, doc]) => ({ ...doc, name, shownDefault: doc.default ?? "—" })),
  };
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

function table(rows: Variable[]): string {
  return ["| Variable | Default | Meaning |", "|---|---|---|", ...rows.map((v) => `| \`${v.name}\` | ${cell(v.shownDefault)} | ${cell(v.description)} |`)].join(
    "\n",
  );
}

/** The generated part of docs/configuration.md (the markers included). */
export function renderConfigTable(): string {
  const { schema, other } = variables();
  return [BEGIN, "", table(schema), "", "Read outside the schema (not validated at start):", "", table(other), "", END].join("\n");
}

/** Markdown to the plain text of a comment: no backticks, links as their text. */
const plain = (markdown: string) => markdown.replace(/\[([^\]]+)\]\([^)]+\)/g, "$1").replace(/`/g, "");

function wrap(text: string, width = 116): string[] {
  const lines: string[] = [];
  let line = "#";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line.length + 1 + word.length > width && line !== "#") {
      lines.push(line);
      line = "#";
    }
    line += ` ${word}`;
  }
  if (line !== "#") lines.push(line);
  return lines;
}

/** deploy/image-host.env, whole. */
export function renderEnvFile(): string {
  const { schema, other } = variables();
  const out = [
    "# /etc/image-host/image-host.env — read by deploy/image-host.service (EnvironmentFile=).",
    "# Written by `bun run docs:config` from src/env.ts: edit the descriptions there, not here. Every variable the",
    "# server reads is below; docs/configuration.md has the same text as a table.",
    "# One VARIABLE=value per line, no quotes, no spaces, no comment after a value (systemd and `set -a; . file`",
    "# then read it the same way). An empty or commented-out variable takes its default. Keep this file",
    "# root:image-host, mode 640: it may hold ADMIN_TOKEN, METRICS_TOKEN, WEBHOOK_SECRET_KEY and DATABASE_URL's password.",
  ];
  for (const v of [...schema, ...other]) {
    if (v.inEnvFile === false) continue;
    const text = [plain(v.description), v.shownDefault === "—" ? "" : `Default: ${plain(v.shownDefault)}.`, v.deployNote ? plain(v.deployNote) : ""]
      .filter(Boolean)
      .join(" ");
    out.push("", ...wrap(`${v.name}: ${text}`));
    if (v.deploy !== undefined) out.push(`${v.name}=${v.deploy}`);
    else {
      const fallback = v.shownDefault.startsWith("`") && v.shownDefault.endsWith("`") && !v.shownDefault.includes("$") ? v.shownDefault.slice(1, -1) : "";
      out.push(`#${v.name}=${v.example ?? fallback}`);
    }
  }
  return `${out.join("\n")}\n`;
}

/** docs/configuration.md with its generated part replaced (the prose around it kept). */
export function withConfigTable(doc: string): string {
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${CONFIG_DOC} has no generated part: put the lines ${BEGIN} and ${END} where the table goes`);
  return doc.slice(0, begin) + renderConfigTable() + doc.slice(end + END.length);
}

/** The files (relative to `root`) that differ from what `bun run docs:config` would write. */
export function staleConfigDocs(root: string): string[] {
  const stale: string[] = [];
  const doc = readFileSync(join(root, CONFIG_DOC), "utf8");
  if (withConfigTable(doc) !== doc) stale.push(CONFIG_DOC);
  let env = "";
  try {
    env = readFileSync(join(root, ENV_FILE), "utf8");
  } catch {}
  if (env !== renderEnvFile()) stale.push(ENV_FILE);
  return stale;
}

/** Writes both files under `root`; returns those it changed. */
export function writeConfigDocs(root: string): string[] {
  const stale = staleConfigDocs(root);
  const docPath = join(root, CONFIG_DOC);
  writeFileSync(docPath, withConfigTable(readFileSync(docPath, "utf8")));
  writeFileSync(join(root, ENV_FILE), renderEnvFile());
  return stale;
}
