/**
 * Albums in the user center: create, rename, delete (images kept, in no album), move selected images in and
 * out, filter the grid; the profile's album count stays exact; and the authorization matrix of every new page and
 * form post (anonymous, the owner, another user, a disabled account, the site switch off, a cross-site post).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { sweepExpired } from "../../src/services/sweeper.ts";
import { ALBUMS_PER_ACCOUNT } from "../../src/db/repositories/albums.ts";
import { albums, images, users } from "../../src/db/schema.ts";
import { ADMIN_TOKEN, createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";
import { visitorClass } from "../support/visitor.ts";

let ctx: TestContext;
let png: Uint8Array;
beforeAll(async () => {
  ctx = await createTestContext();
  png = await makeImage("png", 32, 24);
});
afterAll(() => ctx?.close());

const PASSWORD = "correct horse battery";
let seq = 0;
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `203.0.113.${++addressSeq}`,
);

async function signedInUser() {
  const username = `alb${++seq}_${Math.random().toString(36).slice(2, 6)}`;
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user, visitor };
}

const location = (res: Response) => res.headers.get("location");
const albumsOf = (userId: number) => ctx.db.select().from(albums).where(eq(albums.userId, userId));
const albumNum = async (token: string) => expectStatus(await ctx.json("/api/v1/profile", { headers: ctx.bearer(token) }), 200).data.album_num;
async function uploadPng(token: string, fields: Record<string, string> = {}) {
  return expectStatus(await ctx.upload(token, { bytes: png, filename: "a.png", contentType: "image/png" }, fields), 200).data;
}
const albumIdOfImage = async (key: string) => (await ctx.db.select({ albumId: images.albumId }).from(images).where(eq(images.key, key)))[0]!.albumId;

describe("albums", () => {
  test("create, rename and delete; the profile's album_num follows; deleting keeps the images, in no album", async () => {
    const { user, visitor } = await signedInUser();
    const page = await visitor.get("/user/albums");
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("No albums yet");

    const created = await visitor.post("/user/albums", { name: "  Holidays  " });
    expect([created.status, location(created)]).toEqual([303, "/user/albums?done=created"]);
    const [album] = await albumsOf(user.id);
    expect(album!.name).toBe("Holidays");
    expect(await albumNum(user.token)).toBe(1);
    const listed = await (await visitor.get("/user/albums?done=created")).text();
    expect(listed).toContain("Album created.");
    // both name fields are text inputs (styled as every other), the rename one labelled for its album
    expect(listed).toContain('<input id="name" name="name" type="text" value=""');
    expect(listed).toContain(
      `<label for="rename-${album!.id}" class="visually-hidden">New name for Holidays</label><input id="rename-${album!.id}" name="name" type="text" value="Holidays"`,
    );
    expect(listed).toContain(`href="/user/images?album=${album!.id}"`);

    const image = await uploadPng(user.token, { album_id: String(album!.id) });
    expect(await albumIdOfImage(image.key)).toBe(album!.id);
    await uploadPng(user.token, { album_id: String(album!.id) });
    await uploadPng(user.token); // in no album
    expect(await (await visitor.get("/user/albums")).text()).toMatch(/Holidays<\/a><\/td><td data-label="Images">2</);

    const renamed = await visitor.post(`/user/albums/${album!.id}/rename`, { name: "Summer 2026" });
    expect([renamed.status, location(renamed)]).toEqual([303, "/user/albums?done=renamed"]);
    expect((await albumsOf(user.id))[0]!.name).toBe("Summer 2026");

    // without the page's script, a delete asks first
    const ask = await visitor.post(`/user/albums/${album!.id}/delete`, { confirmed: "0" });
    expect(ask.status).toBe(200);
    expect(await ask.text()).toContain("Its 2 images are kept, in no album.");
    expect((await albumsOf(user.id)).length).toBe(1);
    const deleted = await visitor.post(`/user/albums/${album!.id}/delete`, { confirmed: "1" });
    expect([deleted.status, location(deleted)]).toEqual([303, "/user/albums?done=deleted"]);
    expect(await albumsOf(user.id)).toEqual([]);
    expect(await albumNum(user.token)).toBe(0);
    expect(await albumIdOfImage(image.key)).toBeNull();
    const served = await ctx.request(new URL(image.url).pathname);
    expect(served.status).toBe(200);
  });

  test("bad names are a 422 on the page, nothing created; an account holds at most ALBUMS_PER_ACCOUNT albums", async () => {
    const { user, visitor } = await signedInUser();
    for (const name of ["", "   ", "a".repeat(101), "zero\u200bwidth"]) {
      const res = await visitor.post("/user/albums", { name });
      expect(res.status, JSON.stringify(name)).toBe(422);
      expect(await res.text()).toContain('aria-invalid="true"'); // the page again, the field marked
    }
    // control characters are refused by the form reader itself, before any page code
    for (const name of ["tab\tname", "nul\u0000"]) expect((await visitor.post("/user/albums", { name })).status).toBe(422);
    expect(await albumsOf(user.id)).toEqual([]);
    await ctx.db.update(users).set({ albumNum: ALBUMS_PER_ACCOUNT }).where(eq(users.id, user.id));
    const full = await visitor.post("/user/albums", { name: "one too many" });
    expect(full.status).toBe(400);
    expect(await full.text()).toContain(`You have ${ALBUMS_PER_ACCOUNT} albums`);
    expect(await albumsOf(user.id)).toEqual([]);
    // the admin API holds the same cap
    const admin = await ctx.json(`/api/admin/users/${user.id}/albums`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "via admin" }),
    });
    expectStatus(admin, 400);
  });

  test("move selected images into an album and out; filter the grid by album or by none", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.post("/user/albums", { name: "Work" });
    const [work] = await albumsOf(user.id);
    const [a, b, c] = [await uploadPng(user.token), await uploadPng(user.token), await uploadPng(user.token)];
    const grid = await (await visitor.get("/user/images")).text();
    expect(grid).toContain(`name="image_${a.key}"`);
    expect(grid).toContain(`<option value="${work!.id}">Work</option>`);

    const moved = await visitor.post("/user/images/move", {
      [`image_${a.key}`]: "1",
      [`image_${b.key}`]: "1",
      to_album: String(work!.id),
      back: "/user/images?page=1",
    });
    expect([moved.status, location(moved)]).toEqual([303, "/user/images?page=1&moved=2"]);
    expect([await albumIdOfImage(a.key), await albumIdOfImage(b.key), await albumIdOfImage(c.key)]).toEqual([work!.id, work!.id, null]);

    const inWork = await (await visitor.get(`/user/images?album=${work!.id}`)).text();
    expect(inWork).toContain("Images in Work");
    expect(inWork).toContain("2 images");
    expect(inWork).toContain(`image_${a.key}`);
    expect(inWork).not.toContain(`image_${c.key}`);
    const inNone = await (await visitor.get("/user/images?album=none")).text();
    expect(inNone).toContain("1 image,");
    expect(inNone).toContain(`image_${c.key}`);

    const out = await visitor.post("/user/images/move", { [`image_${a.key}`]: "1", to_album: "none" });
    expect(location(out)).toBe("/user/images?page=1&moved=1");
    expect(await albumIdOfImage(a.key)).toBeNull();
    // the API's list is unchanged in shape: v1 has no album field
    const list = expectStatus(await ctx.json("/api/v1/images", { headers: ctx.bearer(user.token) }), 200).data.data;
    expect(Object.keys(list[0]).includes("album_id")).toBe(false);

    // nothing selected, too many, no such target: 4xx, nothing moved
    expectStatus(await visitor.post("/user/images/move", { to_album: "none" }), 400);
    expectStatus(await visitor.post("/user/images/move", { [`image_${b.key}`]: "1", to_album: "first" }), 422);
    expect(await albumIdOfImage(b.key)).toBe(work!.id);
  });

  test("each album's image count stays exact through every path: upload, move in, out and across, delete, expiry, an album deleted, at once", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.post("/user/albums", { name: "A" });
    await visitor.post("/user/albums", { name: "B" });
    await visitor.post("/user/albums", { name: "C" });
    const [a, b, c] = (await albumsOf(user.id)).sort((x, y) => x.id - y.id);
    /** The counts the Albums page shows, the stored ones, and the images really in each album: all three agree. */
    const check = async (expected: Record<string, number>) => {
      const page = await (await visitor.get("/user/albums")).text();
      const real = (await ctx.db.execute(sql`
        select a.name, a.image_num, (select count(*)::int from images i where i.album_id = a.id) as n
        from albums a where a.user_id = ${user.id} order by a.name`)) as unknown as { name: string; image_num: number; n: number }[];
      const rows = Array.isArray(real) ? real : (real as { rows: typeof real }).rows;
      for (const r of rows) {
        expect([r.name, r.image_num]).toEqual([r.name, r.n]);
        expect([r.name, r.n]).toEqual([r.name, expected[r.name]!]);
        expect(page).toContain(`>${r.name}</a></td><td data-label="Images">${r.n}</td>`);
      }
    };
    const inA = [];
    for (let i = 0; i < 4; i++) inA.push(await uploadPng(user.token, { album_id: String(a!.id) }));
    const loose = [await uploadPng(user.token), await uploadPng(user.token)];
    await check({ A: 4, B: 0, C: 0 });
    // across (A → B), in (none → B), out (A → none)
    await visitor.post("/user/images/move", {
      [`image_${inA[0]!.key}`]: "1",
      [`image_${inA[1]!.key}`]: "1",
      [`image_${loose[0]!.key}`]: "1",
      to_album: String(b!.id),
    });
    await visitor.post("/user/images/move", { [`image_${inA[2]!.key}`]: "1", to_album: "none" });
    await check({ A: 1, B: 3, C: 0 });
    // moving an image into the album it is in changes nothing
    await visitor.post("/user/images/move", { [`image_${inA[0]!.key}`]: "1", to_album: String(b!.id) });
    await check({ A: 1, B: 3, C: 0 });
    // a delete (the API's), and an expiry
    expectStatus(await ctx.json(`/api/v1/images/${inA[1]!.key}`, { method: "DELETE", headers: ctx.bearer(user.token) }), 200);
    const expiring = await uploadPng(user.token, {
      album_id: String(c!.id),
      expired_at: new Date(Date.now() + 60_000).toISOString().replace("T", " ").slice(0, 19),
    });
    await check({ A: 1, B: 2, C: 1 });
    ctx.advance(120_000);
    await sweepExpired(ctx.deps);
    expect(await albumIdOfImage(expiring.key).catch(() => "gone")).toBe("gone");
    await check({ A: 1, B: 2, C: 0 });
    // at once: 12 uploads into C and two moves across A and B in opposite directions, none lost, no deadlock
    const results = await Promise.all([
      ...Array.from({ length: 12 }, () => ctx.upload(user.token, { bytes: png, filename: "a.png", contentType: "image/png" }, { album_id: String(c!.id) })),
      visitor.post("/user/images/move", { [`image_${inA[3]!.key}`]: "1", [`image_${inA[0]!.key}`]: "1", to_album: String(b!.id) }),
      visitor.post("/user/images/move", { [`image_${loose[0]!.key}`]: "1", [`image_${inA[3]!.key}`]: "1", to_album: String(a!.id) }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([...Array(12).fill(200), 303, 303].sort());
    const placed = { A: 0, B: 0, C: 12 } as Record<string, number>;
    for (const key of [inA[0]!.key, inA[3]!.key, loose[0]!.key]) {
      const id = await albumIdOfImage(key);
      placed[id === a!.id ? "A" : id === b!.id ? "B" : "C"]!++;
    }
    await check(placed);
    // an album deleted: its images stay, in no album; the others' counts hold
    await visitor.post(`/user/albums/${b!.id}/delete`, { confirmed: "1" });
    const left = (await albumsOf(user.id)).map((x) => x.name).sort();
    expect(left).toEqual(["A", "C"]);
    await check({ A: placed.A!, C: 12 });
  });

  test("another user's albums and images are out of reach: 404 or 400, nothing changes", async () => {
    const owner = await signedInUser();
    const other = await signedInUser();
    await owner.visitor.post("/user/albums", { name: "Private" });
    const [album] = await albumsOf(owner.user.id);
    const mine = await uploadPng(owner.user.token, { album_id: String(album!.id) });
    const theirs = await uploadPng(other.user.token);

    expect((await other.visitor.post(`/user/albums/${album!.id}/rename`, { name: "taken" })).status).toBe(404);
    expect((await other.visitor.post(`/user/albums/${album!.id}/delete`, { confirmed: "1" })).status).toBe(404);
    expect((await other.visitor.post(`/user/albums/${album!.id}/delete`, { confirmed: "0" })).status).toBe(404);
    expect((await albumsOf(owner.user.id))[0]!.name).toBe("Private");
    // moving into someone else's album: refused; moving someone else's image: ignored
    expectStatus(await other.visitor.post("/user/images/move", { [`image_${theirs.key}`]: "1", to_album: String(album!.id) }), 400);
    expect(await albumIdOfImage(theirs.key)).toBeNull();
    const sneaky = await other.visitor.post("/user/images/move", { [`image_${mine.key}`]: "1", to_album: "none" });
    expect(location(sneaky)).toBe("/user/images?page=1&moved=0");
    expect(await albumIdOfImage(mine.key)).toBe(album!.id);
    // filtering by another's album shows nothing of it
    const peek = await (await other.visitor.get(`/user/images?album=${album!.id}`)).text();
    expect(peek).not.toContain(mine.key);
    expect(peek).toContain("0 images");
    // ids outside the grammar are no album
    for (const id of ["0", "-1", "abc", "99999999999", "1e3"]) expect((await owner.visitor.post(`/user/albums/${id}/rename`, { name: "x" })).status).toBe(404);
  });
});

describe("authorization matrix of the album pages and forms", () => {
  const forms = (albumId: number, key: string): [string, Record<string, string>][] => [
    ["/user/albums", { name: "x" }],
    [`/user/albums/${albumId}/rename`, { name: "y" }],
    [`/user/albums/${albumId}/delete`, { confirmed: "1" }],
    ["/user/images/move", { [`image_${key}`]: "1", to_album: "none" }],
  ];

  test("an anonymous visitor is sent to sign in (GET and every post), and nothing changes", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.post("/user/albums", { name: "Kept" });
    const [album] = await albumsOf(user.id);
    const image = await uploadPng(user.token, { album_id: String(album!.id) });
    const anonymous = new Visitor();
    const page = await anonymous.get("/user/albums");
    expect([page.status, location(page)]).toEqual([303, "/user/login?next=%2Fuser%2Falbums"]);
    for (const [path, fields] of forms(album!.id, image.key)) {
      const res = await anonymous.post(path, fields, { formToken: null });
      expect([res.status, location(res)], path).toEqual([303, "/user/login"]);
    }
    expect((await albumsOf(user.id)).map((a) => a.name)).toEqual(["Kept"]);
    expect(await albumIdOfImage(image.key)).toBe(album!.id);
  });

  test("a cross-site post (another Origin, or no form token) is a 403, and nothing changes", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.post("/user/albums", { name: "Kept" });
    const [album] = await albumsOf(user.id);
    const image = await uploadPng(user.token, { album_id: String(album!.id) });
    for (const [path, fields] of forms(album!.id, image.key)) {
      expect((await visitor.post(path, fields, { origin: "https://evil.example" })).status, path).toBe(403);
      expect((await visitor.post(path, fields, { formToken: null })).status, path).toBe(403);
    }
    expect((await albumsOf(user.id)).map((a) => a.name)).toEqual(["Kept"]);
    expect(await albumIdOfImage(image.key)).toBe(album!.id);
  });

  test("the site switch off (403) and a disabled account (its sessions end: sent to sign in): nothing changes", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.post("/user/albums", { name: "Kept" });
    const [album] = await albumsOf(user.id);
    const image = await uploadPng(user.token, { album_id: String(album!.id) });
    const check = async (status: number) => {
      expect((await visitor.get("/user/albums")).status).toBe(status);
      for (const [path, fields] of forms(album!.id, image.key)) expect((await visitor.post(path, fields)).status, path).toBe(status);
      expect((await albumsOf(user.id)).map((a) => a.name)).toEqual(["Kept"]);
      expect(await albumIdOfImage(image.key)).toBe(album!.id);
    };
    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      await check(403);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
    }
    await ctx.admin("PATCH", `/api/admin/users/${user.id}`, { enabled: false });
    await check(303);
  });
});
