import { expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CONFIG_DOC, ENV_FILE, renderEnvFile, staleConfigDocs, writeConfigDocs } from "../support/config-docs.ts";
import { envShape } from "../../src/env.ts";

/**
 * docs/configuration.md's table and deploy/image-host.env are written from src/env.ts by `bun run docs:config`;
 * `bun run docs:config --check` runs the same check in CI. Here in-process, so that `bun test` fails when either is stale.
 */
const repo = join(import.meta.dir, "..", "..");

test("docs/configuration.md and deploy/image-host.env match src/env.ts (else: bun run docs:config)", () => {
  expect(staleConfigDocs(repo)).toEqual([]);
});

test("the environment file names every variable of the schema, and sets only what the schema accepts", () => {
  const file = renderEnvFile();
  const named = new Set([...file.matchAll(/^#?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]));
  for (const name of Object.keys(envShape.shape)) expect(named.has(name), name).toBe(true);
  const set = Object.fromEntries([...file.matchAll(/^([A-Z][A-Z0-9_]+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
  expect(Object.keys(set).length).toBeGreaterThan(0);
  expect(envShape.safeParse(set).success).toBe(true);
});

test("the check names each stale file, and writing keeps the prose around the table", () => {
  const dir = mkdtempSync(join(tmpdir(), "imghost-config-docs-"));
  try {
    mkdirSync(join(dir, "docs"));
    mkdirSync(join(dir, "deploy"));
    cpSync(join(repo, CONFIG_DOC), join(dir, CONFIG_DOC));
    writeFileSync(join(dir, ENV_FILE), readFileSync(join(repo, ENV_FILE), "utf8").replace(/^#?WEBHOOK_SECRET_KEY=.*\n/m, ""));
    expect(staleConfigDocs(dir)).toEqual([ENV_FILE]);

    const doc = readFileSync(join(dir, CONFIG_DOC), "utf8");
    writeFileSync(join(dir, CONFIG_DOC), `${doc.replace("| `PORT` |", "| `PORTS` |")}\nA closing paragraph of our own.\n`);
    expect(staleConfigDocs(dir)).toEqual([CONFIG_DOC, ENV_FILE]);

    expect(writeConfigDocs(dir)).toEqual([CONFIG_DOC, ENV_FILE]);
    expect(staleConfigDocs(dir)).toEqual([]);
    const written = readFileSync(join(dir, CONFIG_DOC), "utf8");
    expect(written).toContain("| `PORT` |");
    expect(written).not.toContain("PORTS");
    expect(written).toContain("A closing paragraph of our own.");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
