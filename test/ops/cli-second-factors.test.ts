/** `bun run cli user reset-second-factor`, the emergency path for a lost second factor, against a real server. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { passkeys, recoveryCodes, totpAuthenticators } from "../../src/db/schema.ts";
import { type CliSite, startCliSite } from "../support/cli-site.ts";
import type { TestContext } from "../support/harness.ts";

let site: CliSite;
let ctx: TestContext;
beforeAll(async () => {
  site = await startCliSite();
  ctx = site.ctx;
});
afterAll(() => site.close());

const cli = (args: string[]) => site.cli(args);

describe("user reset-second-factor", () => {
  test("help lists it", async () => {
    const r = await cli(["--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("user reset-second-factor <user>");
  });

  test("removes the authenticator app, the recovery codes and the passkeys of the user named", async () => {
    const user = await ctx.createUser();
    const now = new Date();
    await ctx.db.insert(totpAuthenticators).values({ userId: user.id, secret: "sealed", confirmedAt: now });
    await ctx.db.insert(recoveryCodes).values([1, 2, 3].map((n) => ({ userId: user.id, codeHash: `h${n}` })));
    await ctx.db.insert(passkeys).values({ userId: user.id, credentialId: "cred-1", publicKey: "pk", name: "Phone" });
    const r = await cli(["user", "reset-second-factor", user.username]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`Removed the second factors of ${user.username} (id ${user.id}): the authenticator app, 3 recovery codes, 1 passkeys.`);
    expect(await ctx.db.select().from(totpAuthenticators).where(eq(totpAuthenticators.userId, user.id))).toEqual([]);
    expect(await ctx.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, user.id))).toEqual([]);
    expect(await ctx.db.select().from(passkeys).where(eq(passkeys.userId, user.id))).toEqual([]);
    const json = await cli(["user", "reset-second-factor", String(user.id), "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({ totp_removed: false, recovery_codes_removed: 0, passkeys_removed: 0 });
  });

  test("an unknown user is an error", async () => {
    const r = await cli(["user", "reset-second-factor", "nobody-here"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("nobody-here");
  });
});
