/**
 * BENCHMARKS.md from templates: the prose lives in scripts/bench/templates/*.md, with {{placeholders}} that the parts
 * fill with their figures. Each part's template is one `## ` section; the file is the header template followed by
 * the sections in a fixed order, a part's run replacing its own section only.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const TEMPLATES = join(import.meta.dir, "..", "templates");
/** The sections of BENCHMARKS.md in order, by template name. */
export const SECTIONS = ["core", "images", "pages", "webhooks", "memory", "hostile", "compare"] as const;
export type Section = (typeof SECTIONS)[number];

/** The template with every {{name}} replaced; a placeholder without a value is an error, not an empty hole. */
export function render(template: string, values: Record<string, string | number>): string {
  return readFileSync(join(TEMPLATES, template.includes(".") ? template : `${template}.md`), "utf8").replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`templates/${template}.md: no value for {{${name}}}`);
    return String(values[name]);
  });
}

const headingOf = (section: Section) =>
  render(section, new Proxy({}, { has: () => true, get: () => "" }))
    .split("\n")[0]!
    .trim();

/** Writes `text` (a rendered section) as its section of `file`, keeping the other known sections and dropping anything else. */
export function writeSection(file: string, section: Section, text: string) {
  const old = existsSync(file) ? readFileSync(file, "utf8") : "";
  const parts = new Map<string, string>();
  for (const chunk of old.split(/^(?=## )/m).slice(1)) parts.set(chunk.split("\n")[0]!.trim(), chunk.trimEnd());
  parts.set(headingOf(section), text.trimEnd());
  const body = SECTIONS.map((s) => parts.get(headingOf(s))).filter(Boolean);
  writeFileSync(file, `${render("header", {}).trimEnd()}\n\n${body.join("\n\n")}\n`);
}
