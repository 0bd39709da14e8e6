/** `bun run cli invitation ...`, a client of the admin API's invitations, against a real server. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { invitations } from "../../src/db/schema.ts";
import { type CliSite, startCliSite } from "../support/cli-site.ts";
import type { TestContext } from "../support/harness.ts";

let site: CliSite;
let ctx: TestContext;
beforeAll(async () => {
  site = await startCliSite();
  ctx = site.ctx;
});
afterAll(() => site.close());

const cli = (args: string[], env?: Record<string, string | undefined>) => site.cli(args, { env });

describe("invitation commands", () => {
  test("help lists them", async () => {
    const r = await cli(["--help"], {});
    expect(r.code).toBe(0);
    for (const c of ["invitation create [--uses <n>]", "invitation list", "invitation revoke <invitation-id>"]) expect(r.stdout).toContain(c);
  });

  test("create prints the link last, list shows uses and status without the code, revoke withdraws", async () => {
    const group = await ctx.admin("POST", "/api/admin/groups", { name: "cli club" });
    const made = await cli(["invitation", "create", "--uses", "3", "--expires-in", "36h", "--group", String(group.id), "--note", "for the club"]);
    expect(made.code, made.stderr).toBe(0);
    const lines = made.stdout.trimEnd().split("\n");
    const url = lines.at(-1)!;
    expect(url).toMatch(/^http:\/\/img\.test\/user\/register\?invite=[\w-]{32}$/);
    const id = Number(/Made invitation (\d+):/.exec(made.stdout)![1]);
    const [row] = await ctx.db.select().from(invitations).where(eq(invitations.id, id));
    expect(row).toMatchObject({ maxUses: 3, uses: 0, groupId: group.id, note: "for the club" });
    expect(row!.expiresAt.getTime() - row!.createdAt.getTime()).toBe(36 * 3600 * 1000);

    const list = await cli(["invitation", "list"]);
    expect(list.code).toBe(0);
    const code = new URL(url).searchParams.get("invite")!;
    expect(list.stdout).not.toContain(code);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+for the club\\s+${group.id}\\s+0/3\\s+active`));

    const json = await cli(["invitation", "list", "--json"]);
    expect(JSON.parse(json.stdout).invitations[0]).toMatchObject({ id, uses: 0, max_uses: 3, status: "active" });

    const revoked = await cli(["invitation", "revoke", String(id)]);
    expect(revoked.stdout).toBe(`Withdrew invitation ${id} (0/3 used).`);
    expect((await cli(["invitation", "list"])).stdout).toMatch(new RegExp(`${id}\\s+for the club\\s+${group.id}\\s+0/3\\s+revoked`));
  });

  test("bad values are refused before or by the API", async () => {
    const r = await cli(["invitation", "create", "--expires-in", "soon"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("--expires-in");
    const zero = await cli(["invitation", "create", "--uses", "0"]);
    expect(zero.code).not.toBe(0);
    expect(zero.stderr).toContain("max_uses");
    const missing = await cli(["invitation", "revoke", "99999"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("Invitation not found.");
  });
});
