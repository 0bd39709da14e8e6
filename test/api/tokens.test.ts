import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { and, eq, isNotNull, isNull } from "drizzle-orm";
import { alias } from "drizzle-orm/pg-core";
import { findTokenWithOwner } from "../../src/db/repositories/tokens.ts";
import { tokens } from "../../src/db/schema.ts";
import { formatDateTime } from "../../src/http/time.ts";
import { sha256Hex } from "../../src/services/secrets.ts";
import { issueTemporaryTokens } from "../../src/services/tokens.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage, multipart } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

let ctx: TestContext;
let png: Uint8Array;

beforeAll(async () => {
  ctx = await createTestContext();
  png = await makeImage("png", 10, 10);
});
afterAll(() => ctx.close());

const adminCall = (method: string, path: string) => ctx.json(path, { method, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });

async function issue(permanentToken: string, num: number, seconds = 3600) {
  return ctx.json("/api/v1/images/tokens", {
    method: "POST",
    headers: { ...ctx.bearer(permanentToken), "content-type": "application/json" },
    body: JSON.stringify({ num, seconds }),
  });
}

async function issueTokens(permanentToken: string, num: number, seconds = 3600): Promise<{ token: string; expired_at: string }[]> {
  return expectStatus(await issue(permanentToken, num, seconds), 200).data.tokens;
}

const uploadWith = (token: string) => ctx.upload(token, { bytes: png, filename: "a.png", contentType: "image/png" });
/** The temporary token as a form field, which the service reads only before the file part. */
function uploadWithField(token: string) {
  const m = multipart([
    { name: "token", value: token },
    { name: "file", value: png, filename: "a.png", contentType: "image/png" },
  ]);
  return ctx.json("/api/v1/upload", { method: "POST", headers: { "content-type": m.contentType }, body: m.body });
}

/** A second permanent token for the user, as `id|raw`. */
const createPermanentToken = (userId: number): Promise<{ id: number; token: string }> => ctx.admin("POST", `/api/admin/users/${userId}/tokens`);

const permanentId = (token: string) => Number(token.split("|")[0]);

describe("revoking a permanent token", () => {
  test("revokes the temporary tokens it issued; those of the user's other permanent tokens keep working", async () => {
    const user = await ctx.createUser();
    const other = await createPermanentToken(user.id);
    const [first, second] = await issueTokens(user.token, 2);
    const [kept] = await issueTokens(other.token, 1);
    expectStatus(await uploadWith(first!.token), 200);

    expectStatus(await adminCall("DELETE", `/api/admin/tokens/${permanentId(user.token)}`), 200);

    expectStatus(await uploadWith(first!.token), 401);
    expectStatus(await uploadWith(second!.token), 401);
    expectStatus(await uploadWithField(second!.token), 401);
    expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) }), 401);
    // the other permanent token and what it issued are untouched
    expectStatus(await uploadWith(kept!.token), 200);
    expectStatus(await uploadWithField(kept!.token), 200);
    expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(other.token) }), 200);
  });

  test("a temporary token works any number of times until its issuer is revoked", async () => {
    const user = await ctx.createUser();
    const [temporary] = await issueTokens(user.token, 1);
    for (let i = 0; i < 3; i++) expectStatus(await uploadWith(temporary!.token), 200);
    // revoking twice is not an error, and still answers for the issued tokens
    expectStatus(await adminCall("DELETE", `/api/admin/tokens/${permanentId(user.token)}`), 200);
    expectStatus(await adminCall("DELETE", `/api/admin/tokens/${permanentId(user.token)}`), 200);
    expectStatus(await uploadWith(temporary!.token), 401);
  });

  test("revoking one temporary token leaves its issuer and its siblings working", async () => {
    const user = await ctx.createUser();
    const [a, b] = await issueTokens(user.token, 2);
    const [row] = await ctx.db
      .select({ id: tokens.id })
      .from(tokens)
      .where(eq(tokens.secretHash, sha256Hex(a!.token)));
    expectStatus(await adminCall("DELETE", `/api/admin/tokens/${row!.id}`), 200);
    expectStatus(await uploadWith(a!.token), 401);
    expectStatus(await uploadWith(b!.token), 200);
    expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(user.token) }), 200);
  });

  test("a revocation that lands between authentication and issuing refuses the issue (401)", async () => {
    const user = await ctx.createUser();
    const found = await findTokenWithOwner(ctx.db, { id: permanentId(user.token) });
    const caller = { kind: "user", user: found!.user, group: found!.group, tokenKind: "permanent", tokenId: found!.token.id } as const;
    expectStatus(await adminCall("DELETE", `/api/admin/tokens/${caller.tokenId}`), 200);
    const refused = await issueTemporaryTokens(ctx.db, caller, 2, 60, ctx.now()).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "unauthorized" });
    const issued = await ctx.db.select().from(tokens).where(eq(tokens.parentTokenId, caller.tokenId));
    expect(issued).toEqual([]);
  });

  test("issuing concurrently with revocation never leaves a working temporary token behind", async () => {
    const user = await ctx.createUser();
    const parents = await Promise.all(Array.from({ length: 8 }, () => createPermanentToken(user.id)));
    const answers = await Promise.all(parents.flatMap((p) => [issue(p.token, 3), issue(p.token, 3), adminCall("DELETE", `/api/admin/tokens/${p.id}`)]));
    for (const a of answers) expect([200, 401]).toContain(a.status);
    const parent = alias(tokens, "parent");
    const leftOver = await ctx.db
      .select({ id: tokens.id })
      .from(tokens)
      .innerJoin(parent, eq(parent.id, tokens.parentTokenId))
      .where(and(isNotNull(parent.revokedAt), isNull(tokens.revokedAt)));
    expect(leftOver).toEqual([]);
    for (const a of answers.filter((a) => a.status === 200 && a.body.data?.tokens)) {
      expectStatus(await uploadWith(a.body.data.tokens[0].token), 401);
    }
  });
});

describe("GET /api/admin/users/{id}/tokens", () => {
  test("kinds, dates, revocation and issuers, and never a secret or its hash", async () => {
    const before = formatDateTime(new Date(Math.floor(ctx.now().getTime() / 1000) * 1000));
    const user = await ctx.createUser();
    const other = await createPermanentToken(user.id);
    const fromFirst = await issueTokens(user.token, 2, 600);
    const fromOther = await issueTokens(other.token, 1, 60);
    expectStatus(await adminCall("DELETE", `/api/admin/tokens/${permanentId(user.token)}`), 200);
    const after = formatDateTime(ctx.now());

    const body = expectStatus(await adminCall("GET", `/api/admin/users/${user.id}/tokens`), 200);
    const listed = body.data.tokens as Record<string, unknown>[];
    const firstId = permanentId(user.token);
    expect(listed.map((t) => [t.kind, t.parent_token_id])).toEqual([
      ["permanent", null],
      ["permanent", null],
      ["temporary", firstId],
      ["temporary", firstId],
      ["temporary", other.id],
    ]);
    const temporaryIds = await Promise.all(
      [...fromFirst, ...fromOther].map(async ({ token }) => {
        const [row] = await ctx.db
          .select({ id: tokens.id })
          .from(tokens)
          .where(eq(tokens.secretHash, sha256Hex(token)));
        return row!.id;
      }),
    );
    expect(listed.map((t) => t.id)).toEqual([firstId, other.id, ...temporaryIds]);
    const duringTest = (date: unknown) => typeof date === "string" && date >= before && date <= after;
    for (const t of listed) {
      expect(Object.keys(t).sort()).toEqual(["created_at", "expired_at", "id", "kind", "label", "last_used_at", "parent_token_id", "revoked_at"]);
      expect(duringTest(t.created_at)).toBe(true);
    }
    expect(listed.map((t) => t.expired_at)).toEqual([null, null, fromFirst[0]!.expired_at, fromFirst[1]!.expired_at, fromOther[0]!.expired_at]);
    // the permanent token and what it issued, revoked at the same moment; the other token's family untouched
    const revoked = listed.map((t) => t.revoked_at);
    expect(duringTest(revoked[0])).toBe(true);
    expect(revoked).toEqual([revoked[0], null, revoked[0], revoked[0], null]);

    const text = JSON.stringify(body);
    const raws = [user.token, user.token.split("|")[1]!, other.token, other.token.split("|")[1]!, ...[...fromFirst, ...fromOther].map((t) => t.token)];
    for (const raw of raws) {
      expect(text).not.toContain(raw);
      expect(text).not.toContain(sha256Hex(raw));
    }
  });

  test("a user without tokens has an empty list; a missing user is 404, a malformed id 422", async () => {
    const user = await ctx.admin("POST", "/api/admin/users", { username: "tokenless", email: "tokenless@example.com" });
    expect(await ctx.admin("GET", `/api/admin/users/${user.id}/tokens`)).toEqual({ tokens: [], current_page: 1, last_page: 1, per_page: 100, total: 0 });
    expectStatus(await adminCall("GET", "/api/admin/users/999999/tokens"), 404);
    expectStatus(await adminCall("GET", "/api/admin/users/abc/tokens"), 422);
    expectStatus(await ctx.json(`/api/admin/users/${user.id}/tokens`, { headers: ctx.bearer("not-the-admin-token") }), 401);
  });
});
