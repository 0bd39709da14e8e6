// The layer check (test/support/layers.ts; `bun run check:layers` in CI), run in-process: the real src/ passes,
// and a small tree with one import of each kind that runs up is refused, naming file → import.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { checkLayers, describe as describeViolation, layerOf, sourceImports } from "../support/layers.ts";

const src = join(import.meta.dir, "..", "..", "src");

describe("the layers of src/", () => {
  test("no import in src/ runs up a layer", () => {
    const violations = checkLayers(src);
    expect(violations.map(describeViolation)).toEqual([]);
  });

  test("every file of src/ has a layer, and the scan sees imports of every kind", () => {
    const imports = sourceImports(src);
    for (const i of imports) expect(() => layerOf(i.from)).not.toThrow();
    // type-only imports are counted too (web/admin/api.ts names its context type, http/types.ts the services' type)
    expect(imports.some((i) => i.from === "http/types.ts" && i.to === "services/index.ts" && i.typeOnly)).toBe(true);
    expect(imports.length).toBeGreaterThan(500);
  });
});

describe("a tree with imports that run up", () => {
  const root = mkdtempSync(join(tmpdir(), "layers-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  write("db/client.ts", 'import { installQueue } from "../webhooks/queue.ts";\nexport const x = installQueue;\n');
  write("db/repositories/tokens.ts", 'import type { Services } from "../../services/index.ts";\nexport type T = Services;\n');
  write("observability/metrics.ts", 'export const later = () => import("../services/index.ts");\n');
  write("images/probe.ts", 'export type R = typeof import("../routes/site/get-readiness.ts");\n');
  write("web/tokens.tsx", 'export { TemporaryTokenRequest } from "../routes/tokens/create-temporary-tokens.ts";\n');
  write("routes/admin/users.ts", 'import { emitEvent } from "../../webhooks/events.ts";\nexport const e = emitEvent;\n');
  write("cli/commands/images.ts", 'import { AdminUser } from "../../routes/admin/common.ts";\nexport const a = AdminUser;\n');
  // allowed: down, sideways, a shared file's type-only import, the CLI's use of the spec's types
  write(
    "services/index.ts",
    'import { Metrics } from "../observability/metrics.ts";\nimport type { Db } from "../db/client.ts";\nexport const m = Metrics;\nexport type D = Db;\n',
  );
  write("services/delete.ts", 'import { emitEvent } from "../webhooks/events.ts";\nexport const e = emitEvent;\n');
  write("deps.ts", 'import type { BodyGateLimits } from "./http/body-gate.ts";\nexport type L = BodyGateLimits;\n');
  write("cli/client.ts", 'import type { paths } from "../../openapi/schema";\nexport type P = paths;\n');
  write("routes/site/get-readiness.ts", "export const h = 1;\n");
  write("routes/tokens/create-temporary-tokens.ts", "export const TemporaryTokenRequest = 1;\n");
  write("routes/admin/common.ts", "export const AdminUser = 1;\n");
  write("webhooks/queue.ts", "export const installQueue = 1;\n");
  write("webhooks/events.ts", "export const emitEvent = 1;\n");
  write("observability/log.ts", "export const log = 1;\n");
  write("http/body-gate.ts", "export type BodyGateLimits = number;\n");

  test("each one is named, file → import, with both layers", () => {
    const found = checkLayers(root).map(describeViolation).sort();
    expect(found).toEqual([
      "src/cli/commands/images.ts:1 (cli) → ../../routes/admin/common.ts (routes)",
      "src/db/client.ts:1 (db) → ../webhooks/queue.ts (webhooks)",
      "src/db/repositories/tokens.ts:1 (db) → ../../services/index.ts (services) [type-only]",
      "src/images/probe.ts:1 (images) → ../routes/site/get-readiness.ts (routes) [type-only]",
      "src/observability/metrics.ts:1 (observability) → ../services/index.ts (services)",
      "src/routes/admin/users.ts:1 (routes) → ../../webhooks/events.ts (webhooks: events are emitted by services only)",
      "src/web/tokens.tsx:1 (web) → ../routes/tokens/create-temporary-tokens.ts (routes)",
    ]);
  });

  test("the command fails with the list and passes on the real tree", async () => {
    const script = join(import.meta.dir, "..", "..", "scripts", "check-layers.ts");
    const real = Bun.spawnSync(["bun", script], { stdout: "pipe", stderr: "pipe" });
    expect(real.exitCode).toBe(0);
    const bad = Bun.spawnSync(["bun", script, root], { stdout: "pipe", stderr: "pipe" });
    expect(bad.exitCode).toBe(1);
    expect(bad.stderr.toString()).toContain("src/db/client.ts:1 (db) → ../webhooks/queue.ts (webhooks)");
    expect(bad.stderr.toString()).toContain("7 import(s) run up a layer");
  });
});
