/**
 * The user center's and admin pages' journeys in a real browser (Debian's Chromium through playwright-core): a new user makes an album, uploads into it
 * from the upload page, finds images by album and by name, makes one private, opens an image's page and copies its
 * link, moves images out, deletes the album (its images stay); a new administrator finds that user, changes their
 * capacity, makes a one-time password link that the user then uses. At desktop and phone widths; every request that
 * leaves loopback fails the test; screenshots in test/browser/artifacts/journeys/ (git-ignored).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { type BrowserSite, CHROMIUM, hasChromium, PASSWORD, startBrowserSite } from "../support/browser-site.ts";
import { makeImage } from "../support/images.ts";

if (!hasChromium) console.warn(`test/browser/journeys.test.ts skipped: ${CHROMIUM} not found (apt-get install chromium)`);

const ARTIFACTS = join(import.meta.dir, "artifacts", "journeys");
let site: BrowserSite;
let origin: string;
let context: BrowserContext;
let page: Page;

const shot = (p: Page, name: string) => p.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

async function signIn(p: Page, login: string, password = PASSWORD) {
  await p.goto(`${origin}/user/login`);
  await p.getByLabel("Username or email").fill(login);
  await p.getByLabel("Password").fill(password);
  await Promise.all([p.waitForURL(`${origin}/user/dashboard`), p.getByRole("button", { name: "Sign in" }).click()]);
}

describe.skipIf(!hasChromium)("user and administrator journeys in Chromium", () => {
  beforeAll(async () => {
    site = await startBrowserSite({
      artifacts: ARTIFACTS,
      user: { username: "june", email: "june@example.com", name: "June" },
      ignoreConsole: /status of (400|401|403|404|422|429)/,
    });
    ({ origin, context } = site);
    page = await context.newPage();
    await signIn(page, "june");
  }, 120_000);

  afterAll(async () => {
    await site?.close();
  }, 60_000);

  test("albums: create one, upload into it, filter by it, search by name, make one private, open an image, move out, delete the album", async () => {
    await page.getByRole("link", { name: "Albums", exact: true }).click();
    await page.getByLabel("Name").fill("Holidays");
    await Promise.all([page.waitForURL(/\/user\/albums\?done=created$/), page.getByRole("button", { name: "Create" }).click()]);
    await page.getByRole("link", { name: "Holidays" }).waitFor();
    await shot(page, "01-albums");

    await page.getByRole("link", { name: "Upload", exact: true }).click();
    await page.getByLabel("Album").selectOption({ label: "Holidays" });
    await page.getByLabel("Choose images, or drop them here").setInputFiles([
      { name: "beach.png", mimeType: "image/png", buffer: Buffer.from(await makeImage("png", 320, 240, "#2288cc")) },
      { name: "sunset.png", mimeType: "image/png", buffer: Buffer.from(await makeImage("png", 320, 240, "#cc5522")) },
    ]);
    await page.locator(".upload.done").nth(1).waitFor();
    for (const name of ["beach.png", "sunset.png"]) await expect(page.locator(`.upload[data-name="${name}"] .state`).textContent()).resolves.toBe("Uploaded.");

    // the grid filtered by the album: both images; searched by name: one
    await page.goto(`${origin}/user/images`);
    await page.getByLabel("Album").selectOption({ label: "Holidays" });
    await page.getByRole("button", { name: "Show" }).click();
    await page.getByTestId("total").filter({ hasText: "2 images" }).waitFor();
    await page.getByLabel("Name contains").fill("SUN");
    await page.getByRole("button", { name: "Show" }).click();
    await page.getByTestId("total").filter({ hasText: "1 image" }).waitFor();
    expect(await page.locator(".grid .image").count()).toBe(1);
    await shot(page, "02-images-search");

    // make it private from the selection
    await page.getByLabel("Select sunset.png").check();
    await page.getByRole("button", { name: "Make private" }).click();
    await page.locator(".grid .image").first().getByText("private").waitFor();
    const listed = await fetch(`${origin}/api/v1/images`, {
      headers: {
        authorization: `Bearer ${(await site.admin("POST", `/api/admin/users/${(await site.admin("GET", "/api/admin/users?username=june")).users[0].id}/tokens`)).token}`,
      },
    });
    const items = ((await listed.json()) as any).data.data as { origin_name: string; is_public: boolean }[];
    expect(items.find((i) => i.origin_name === "sunset.png")!.is_public).toBe(false);
    expect(items.find((i) => i.origin_name === "beach.png")!.is_public).toBe(true);

    // the image's own page: its picture, its links with copy buttons
    await page.locator(".grid .image").first().locator("a.thumb").click();
    await page.waitForURL(/\/user\/images\/[\w-]+$/);
    await page.getByRole("heading", { level: 1 }).filter({ hasText: "sunset.png" }).waitFor();
    await page
      .getByRole("button", { name: /Copy URL/ })
      .first()
      .click();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toMatch(new RegExp(`^${origin}/i/.+\\.png$`));
    await shot(page, "03-image-page");

    // move both out of the album, then delete the album (the page's script asks first)
    await page.goto(`${origin}/user/images`);
    for (const name of ["beach.png", "sunset.png"]) await page.getByLabel(`Select ${name}`).check();
    await page.getByLabel("Move to").selectOption({ label: "No album" });
    await page.getByRole("button", { name: "Move", exact: true }).click();
    await page.getByText("2 images moved.").waitFor();
    await page.goto(`${origin}/user/albums`);
    page.once("dialog", (d) => d.accept());
    await Promise.all([page.waitForURL(/done=deleted$/), page.getByRole("button", { name: "Delete the album Holidays" }).click()]);
    await page.getByText("No albums yet").waitFor();
    await page.goto(`${origin}/user/images`);
    await page.getByTestId("total").filter({ hasText: "2 images" }).waitFor();
    expect(site.foreign).toEqual([]);
    expect(site.pageErrors).toEqual([]);
  }, 120_000);

  test("at phone width the album and image pages fit the screen and their controls are reachable", async () => {
    const phone = await site.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const p = await phone.newPage();
    await signIn(p, "june");
    for (const [path, name] of [
      ["/user/albums", "04-phone-albums"],
      ["/user/images", "05-phone-images"],
    ] as const) {
      await p.goto(`${origin}${path}`);
      const overflow = await p.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      expect(overflow, `${path} scrolls sideways`).toBeLessThanOrEqual(0);
      await shot(p, name);
    }
    await phone.close();
    expect(site.foreign).toEqual([]);
  }, 60_000);

  test("an administrator finds the user, changes their capacity and makes a one-time link the user then uses", async () => {
    await site.admin("POST", "/api/admin/users", { username: "ada", email: "ada@example.com", role: "admin" });
    const ada = (await site.admin("GET", "/api/admin/users?username=ada")).users[0];
    await site.admin("PATCH", `/api/admin/users/${ada.id}`, { password: PASSWORD });
    const adminContext = await site.newContext({ viewport: { width: 1280, height: 860 } });
    const a = await adminContext.newPage();
    await signIn(a, "ada");
    await a.getByRole("link", { name: "Admin", exact: true }).click();
    await a.waitForURL(`${origin}/user/admin`);
    await a.getByRole("img", { name: /Uploads per day/ }).waitFor();
    await shot(a, "06-admin-overview");

    await a.getByRole("navigation", { name: "Administration" }).getByRole("link", { name: "Users" }).click();
    await a.getByLabel("Search by username, name or email").fill("june@");
    await a.getByRole("button", { name: "Search" }).click();
    await a.getByRole("link", { name: "june", exact: true }).click();
    await a.getByLabel("Capacity", { exact: true }).fill("2");
    await a.getByLabel("Unit of Capacity").selectOption("MB");
    await a.getByRole("button", { name: "Save" }).click();
    await a.getByText("Changes saved.").waitFor();
    const june = (await site.admin("GET", "/api/admin/users?username=june")).users[0];
    expect(june.capacity_kb).toBe(2048);
    await a.getByRole("button", { name: "Make a link" }).click();
    const link = await a.getByLabel("One-time link").inputValue();
    await shot(a, "07-admin-user");
    const audit = (await site.admin("GET", "/api/admin/audit-log?limit=2")).entries;
    expect(audit.map((e: any) => [e.action, e.actor])).toEqual([
      ["POST /api/admin/users/{id}/password-link", `ada (user ${ada.id})`],
      ["PATCH /api/admin/users/{id}", `ada (user ${ada.id})`],
    ]);

    // the user opens the link in their own browser and sets a password
    const userContext = await site.newContext({ viewport: { width: 390, height: 844 } });
    const u = await userContext.newPage();
    await u.goto(link);
    await u.getByLabel("New password", { exact: true }).fill("june's new password");
    await u.getByLabel("New password, again").fill("june's new password");
    await u.getByRole("button", { name: "Set password" }).click();
    await u.getByText("Your password is set.").waitFor();
    await signIn(u, "june", "june's new password");
    await shot(u, "08-link-used");
    await adminContext.close();
    await userContext.close();
    expect(site.foreign).toEqual([]);
    expect(site.pageErrors).toEqual([]);
  }, 120_000);

  test("an administrator edits a group, tests a storage, switches guest upload, deletes a user's image and runs the reconciler", async () => {
    const ada = (await site.admin("GET", "/api/admin/users?username=ada")).users[0];
    const adminContext = await site.newContext({ viewport: { width: 1280, height: 860 } });
    const a = await adminContext.newPage();
    await signIn(a, "ada");

    // Groups: change the default group's largest file
    await a.goto(`${origin}/user/admin/groups`);
    await a
      .getByRole("link", { name: /Default/ })
      .first()
      .click();
    await a.getByLabel("Largest file", { exact: true }).fill("20");
    await a.getByLabel("Unit of Largest file").selectOption("MB");
    await a.getByRole("button", { name: "Save the group" }).click();
    await a.getByRole("status").or(a.locator(".notice.success")).first().waitFor();
    expect((await site.admin("GET", "/api/admin/groups")).groups.find((g: any) => g.is_default).max_file_size_kb).toBe(20480);
    await shot(a, "09-admin-group");

    // Strategies: the Test button probes the storage
    await a.goto(`${origin}/user/admin/strategies`);
    await a
      .getByRole("button", { name: /^Test the storage of / })
      .first()
      .click();
    await a.getByText(/its storage is writable/).waitFor();
    await shot(a, "10-admin-strategies");

    // Settings: guest upload on
    await a.goto(`${origin}/user/admin/settings`);
    await a.getByLabel("Guest upload").check();
    await a.getByRole("button", { name: "Save the settings" }).click();
    await a.waitForLoadState("load");
    expect((await site.admin("GET", "/api/admin/settings")).guest_upload_enabled).toBe(true);
    await site.admin("PATCH", "/api/admin/settings", { guest_upload_enabled: false });

    // Images: delete june's beach.png (the page's script asks first)
    await a.goto(`${origin}/user/admin/images`);
    a.once("dialog", (d) => d.accept());
    await a.getByRole("button", { name: "Delete beach.png" }).click();
    await a.waitForLoadState("load");
    const left = (await site.admin("GET", "/api/admin/images")).images.map((i: any) => i.origin_name);
    expect(left).toContain("sunset.png");
    expect(left).not.toContain("beach.png");
    await shot(a, "11-admin-images");

    // Maintenance: a dry run, then apply
    await a.goto(`${origin}/user/admin/maintenance`);
    await a.getByRole("button", { name: "Run a dry run" }).click();
    await a.getByRole("button", { name: "Apply: quarantine the orphans" }).waitFor();
    await shot(a, "12-admin-maintenance");

    // every change above is in the audit log under ada
    const audit = (await site.admin("GET", "/api/admin/audit-log?limit=20")).entries as any[];
    const mine = audit.filter((e) => e.actor === `ada (user ${ada.id})`).map((e) => e.action);
    for (const action of [
      "PATCH /api/admin/groups/{id}",
      "POST /api/admin/strategies/{id}/test",
      "PATCH /api/admin/settings",
      "DELETE /api/admin/images/{key}",
      "POST /api/admin/storage/reconcile",
    ]) {
      expect(mine).toContain(action);
    }
    await adminContext.close();
    expect(site.foreign).toEqual([]);
    expect(site.pageErrors).toEqual([]);
  }, 180_000);
});
