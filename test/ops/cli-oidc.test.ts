/**
 * `bun run cli oidc ...`, a client of the admin API's identity providers, against a real server; and the
 * administrator's way back from provider-only sign-in: `settings set password_sign_in true` and `user set-password`.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import { oidcProviders } from "../../src/db/schema.ts";
import { type CliSite, startCliSite } from "../support/cli-site.ts";
import type { TestContext } from "../support/harness.ts";

setDefaultTimeout(60_000);

let site: CliSite;
let ctx: TestContext;
let BASE_URL: string;
beforeAll(async () => {
  site = await startCliSite();
  ctx = site.ctx;
  BASE_URL = site.baseUrl;
  ctx.deps.config.baseUrl = BASE_URL;
});
afterAll(() => site.close());

const cli = (args: string[], stdin?: string) => site.cli(args, { stdin });
async function ok(args: string[], stdin?: string) {
  const r = await cli(args, stdin);
  if (r.code !== 0) throw new Error(`cli ${args.join(" ")} → ${r.code}\n${r.stderr}`);
  return r.stdout;
}

describe("oidc commands", () => {
  test("add (secret from standard input), list, set, show, remove", async () => {
    const added = JSON.parse(
      await ok(
        [
          "oidc",
          "add",
          "authentik",
          "--label",
          "Sign in with Authentik",
          "--issuer",
          "https://auth.example.com/application/o/images/",
          "--client-id",
          "images",
          "--groups-claim",
          "groups",
          "--admin-group",
          "image-admins",
          "--group-map",
          `family=${ctx.defaultGroupId}`,
          "--auto-provision",
          "true",
          "--secret",
          "--json",
        ],
        "the-client-secret",
      ),
    );
    expect(added).toMatchObject({
      slug: "authentik",
      label: "Sign in with Authentik",
      issuer: "https://auth.example.com/application/o/images/",
      client_id: "images",
      client_secret_set: true,
      groups_claim: "groups",
      admin_group: "image-admins",
      group_map: [{ value: "family", group_id: ctx.defaultGroupId }],
      auto_provision: true,
      enabled: true,
      redirect_uri: `${BASE_URL}/user/oidc/authentik/callback`,
    });
    const [row] = await ctx.db.select().from(oidcProviders).where(eq(oidcProviders.id, added.id));
    expect(row!.clientSecret).not.toContain("the-client-secret");

    const list = await ok(["oidc", "list"]);
    expect(list).toContain("authentik");
    expect(list).toContain(`${BASE_URL}/user/oidc/authentik/callback`);
    expect(list).toContain("enabled,auto-provision,secret");
    expect(list).not.toContain("the-client-secret");

    const changed = JSON.parse(await ok(["oidc", "set", String(added.id), "--admin-group", "null", "--enabled", "false", "--no-secret", "--json"]));
    expect(changed).toMatchObject({ admin_group: null, enabled: false, client_secret_set: false });
    expect(await ok(["oidc", "show", String(added.id)])).toContain(`redirect URI at the provider: ${BASE_URL}/user/oidc/authentik/callback`);

    const refused = await cli(["oidc", "add", "x", "--label", "X", "--issuer", "http://auth.example.com", "--client-id", "x"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("it must use https");
    const missing = await cli(["oidc", "add", "y", "--label", "Y"]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("needs --issuer");

    await ok(["oidc", "remove", String(added.id)]);
    expect(await ctx.db.select().from(oidcProviders)).toHaveLength(0);
  });

  test("the way back from provider-only sign-in: the settings switch and a password, from the CLI", async () => {
    await ok(["settings", "set", "password_sign_in", "false"]);
    const admin = await ctx.admin("POST", "/api/admin/users", { username: "rescue", email: "rescue@example.com", role: "admin" });
    const signIn = () =>
      ctx.request("/user/login", {
        method: "POST",
        headers: { origin: "http://img.test", "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": "203.0.113.9" },
        body: new URLSearchParams({ login: "rescue", password: "a long rescue password" }).toString(),
        redirect: "manual",
      });
    expect((await signIn()).status).toBe(403);
    await ok(["user", "set-password", "rescue"], "a long rescue password");
    expect((await signIn()).status).toBe(403);
    expect(await ok(["settings", "set", "password-sign-in", "true"])).toContain("password_sign_in");
    const res = await signIn();
    expect(res.status).toBe(303);
    expect(res.headers.getSetCookie().some((c) => c.startsWith("ih_session="))).toBe(true);
    expect(admin.role).toBe("admin");
  });
});
