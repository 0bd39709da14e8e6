/**
 * Integrations: /user/integrations gives uploaders' settings, and every one of them really uploads.
 *
 * The site runs on a loopback port that is also its BASE_URL (as a deployment), and each configuration is read
 * from the rendered page (or the downloaded file), never from the page's own builders, then used as its client
 * would use it:
 *
 * - curl: the page's line run by bash with /usr/bin/curl;
 * - the shell script: run by bash on a real PNG, piped (as `flameshot gui --raw | script`) and as a file, with jq
 *   and, on a PATH without jq, with python3; a fake wl-copy records the clipboard; a refusal exits 1 with the reason;
 * - ShareX: the downloaded .sxcu checked against ShareX's documented format (the properties and enums of
 *   ShareX.UploadersLib/CustomUploader/CustomUploaderItem.cs, the file an "Export" writes), then its request
 *   reproduced from the file (method, URL, headers, Arguments, FileFormName) and its `{json:…}` syntax resolved
 *   against the answer;
 * - PicGo: the real picgo-plugin-lankong (npm pack, into a temp dir, never a dependency) loaded with a stand-in for
 *   PicGo's ctx (getConfig, helper.uploader.register, Request.request, output, on/emit, log) and its `handle`
 *   run, its sync delete too; where the registry cannot be reached, its request is reproduced from its source
 *   instead (the test says which);
 * - PicList: its built-in lskyplist uploader's request reproduced from its source (src/plugins/uploader/lskyplist.ts
 *   of PicList-Core: the same request as the plugin, `host` and `version` for `server` and `lskyProVersion`);
 * - uPic: its custom host's request reproduced from its source (Models/Custom/CustomUploader.swift: Alamofire
 *   multipart with the Bodys, a `key` field and the file under File Field; CustomHostUtil.parseResultUrl for the
 *   URL Path).
 *
 * Each check asserts that the image landed (the API's image list, the database) and that the answer's URL serves it.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createRequire } from "node:module";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { and, eq, isNull } from "drizzle-orm";
import { images, tokens } from "../../src/db/schema.ts";
import { sha256Hex } from "../../src/services/secrets.ts";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { visitorClass } from "../support/visitor.ts";

setDefaultTimeout(60_000);

const PLACEHOLDER = "PASTE-YOUR-TOKEN-HERE";
const PASSWORD = "correct horse battery";

let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let origin: string;
let png: Uint8Array;
const temps: string[] = [];
const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temps.push(dir);
  return dir;
};

beforeAll(async () => {
  ctx = await createTestContext();
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req, srv) => ctx.app.fetch(req, srv) });
  origin = `http://127.0.0.1:${server.port}`;
  // a deployment's BASE_URL is the address it is served on; the local strategy serves its images from there
  ctx.deps.config.baseUrl = origin;
  await ctx.admin("PATCH", "/api/admin/strategies/1", { config: { url: `${origin}/i` } });
  png = await makeImage("png", 40, 30);
});
afterAll(async () => {
  await server?.stop(true);
  await ctx?.close();
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

let seq = 0;
let addressSeq = 0;
const Visitor = visitorClass(
  () => ctx,
  () => `198.51.100.${++addressSeq}`,
);

async function signedInUser() {
  const username = `int${++seq}_${Math.random().toString(36).slice(2, 6)}`;
  const user = await ctx.createUser({ username, email: `${username}@example.com`, password: PASSWORD });
  const visitor = new Visitor();
  expect((await visitor.signIn(username)).status).toBe(303);
  return { user, visitor };
}

// ---- reading the page ------------------------------------------------------------------------------------------

const unescape = (s: string) =>
  s.replace(/&(lt|gt|quot|#39|#x27|amp);/g, (_, e: string) => ({ lt: "<", gt: ">", quot: '"', "#39": "'", "#x27": "'", amp: "&" })[e]!);

/** The text of the `<pre id=…><code>` block of the page. */
function block(html: string, id: string): string {
  const m = new RegExp(`<pre id="${id}"[^>]*><code>([\\s\\S]*?)</code></pre>`).exec(html);
  if (!m) throw new Error(`the page has no block #${id}`);
  return unescape(m[1]!);
}

/** The text of the element with this id (no markup inside). */
function byId(html: string, id: string): string {
  const m = new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(html);
  if (!m) throw new Error(`the page has no #${id}`);
  return unescape(m[1]!);
}

const newTokenIn = (html: string) =>
  unescape(/data-testid="new-token"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*data-testid="new-token"/.exec(html)!.slice(1).find(Boolean)!);

/** A page with a token made on the spot, for these options. */
async function pageWithNewToken(visitor: InstanceType<typeof Visitor>, fields: Record<string, string> = {}) {
  const res = await visitor.post("/user/integrations", fields);
  expect(res.status).toBe(200);
  const html = await res.text();
  return { html, token: newTokenIn(html), res };
}

// ---- the checks every configuration passes --------------------------------------------------------------------

/** The image `key` is in the owner's list (the API, over the network) and in the database, and `url` serves it. */
async function landed(token: string, key: string, url: string) {
  const list = await fetch(`${origin}/api/v1/images?per_page=100`, { headers: { authorization: `Bearer ${token}`, accept: "application/json" } });
  expect(list.status).toBe(200);
  const listed = ((await list.json()) as { data: { data: { key: string; links: { url: string } }[] } }).data.data;
  const item = listed.find((i) => i.key === key);
  expect(item, `image ${key} in the list`).toBeDefined();
  expect(item!.links.url).toBe(url);
  const [row] = await ctx.db.select().from(images).where(eq(images.key, key));
  expect(row).toBeDefined();
  expect(url.startsWith(`${origin}/`)).toBe(true);
  const served = await fetch(url);
  expect(served.status).toBe(200);
  expect(served.headers.get("content-type")).toBe("image/png");
  const bytes = new Uint8Array(await served.arrayBuffer());
  expect([...bytes.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return row!;
}

/** The key of the owner's image that `url` serves (from the API's list). */
async function keyOfUrl(token: string, url: string) {
  const list = await fetch(`${origin}/api/v1/images?per_page=100`, { headers: { authorization: `Bearer ${token}`, accept: "application/json" } });
  const listed = ((await list.json()) as { data: { data: { key: string; links: { url: string } }[] } }).data.data;
  const found = listed.find((i) => i.links.url === url);
  expect(found, `an image of the list served at ${url}`).toBeDefined();
  return found!.key;
}

/** A command, run while this process keeps serving (the server under test is in it): no spawnSync. */
async function run(argv: string[], options: { cwd?: string; env?: Record<string, string>; stdin?: Uint8Array } = {}) {
  const proc = Bun.spawn(argv, {
    cwd: options.cwd,
    env: options.env ?? { PATH: "/usr/bin:/bin", HOME: tmpdir() },
    stdin: options.stdin ? new Blob([new Uint8Array(options.stdin)]) : "ignore",
    stdout: "pipe",
    stderr: "pipe",
    timeout: 30_000,
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("the page and its token", () => {
  test("without a token: the placeholder everywhere, the account's tokens named (labels only), no secret", async () => {
    const { user, visitor } = await signedInUser();
    const res = await visitor.get("/user/integrations");
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('aria-current="page">Integrations');
    for (const id of ["cfg-sharex", "cfg-picgo", "cfg-piclist", "cfg-curl", "cfg-script"]) expect(block(html, id)).toContain(PLACEHOLDER);
    expect(byId(html, "upic-header-value")).toBe(`Bearer ${PLACEHOLDER}`);
    for (const h of ["ShareX (Windows)", "PicGo", "PicList", "uPic (macOS)", "curl", "Script for screenshot tools (Flameshot and others)"]) {
      expect(html).toMatch(new RegExp(`<h2 id="[a-z]+-title">${h.replace(/[()]/g, "\\$&")}</h2>`));
    }
    expect(html).toContain("Make a new token for these settings");
    expect(html).toContain("There is no deletion URL");
    expect(html).not.toContain(user.token);
    expect(html).not.toContain(user.token.split("|")[1]!);
    // every copy button has an accessible name, every select a label
    expect(html.match(/<button type="button" class="copy"/g)!.length).toBeGreaterThanOrEqual(7);
    for (const id of ["strategy_id", "album_id", "permission"]) expect(html).toContain(`<label for="${id}">`);
  });

  test("a new token for the settings: permanent, labelled, shown once, the page not stored, counted as on the tokens page", async () => {
    const { user, visitor } = await signedInUser();
    const before = await ctx.db
      .select()
      .from(tokens)
      .where(and(eq(tokens.userId, user.id), eq(tokens.kind, "permanent")));
    const { html, token, res } = await pageWithNewToken(visitor);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(token).toMatch(/^\d+\|[A-Za-z0-9_-]+$/);
    expect(html).toContain("shown only this once");
    for (const id of ["cfg-sharex", "cfg-picgo", "cfg-piclist", "cfg-curl", "cfg-script"]) {
      expect(block(html, id)).toContain(token);
      expect(block(html, id)).not.toContain(PLACEHOLDER);
    }
    const after = await ctx.db
      .select()
      .from(tokens)
      .where(and(eq(tokens.userId, user.id), eq(tokens.kind, "permanent"), isNull(tokens.revokedAt)));
    expect(after.length).toBe(before.length + 1);
    const made = after.find((t) => t.secretHash === sha256Hex(token.split("|")[1]!))!;
    expect(made.label).toMatch(/^Integrations \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    // listed on the tokens page by its label, never shown again
    expect(await (await visitor.get("/user/tokens")).text()).toContain(made.label!);
    const again = await (await visitor.get("/user/integrations")).text();
    expect(again).not.toContain(token.split("|")[1]!);
    expect(again).toContain(made.label!);
  });

  test("the account's cap on permanent tokens holds: 400 on the page, nothing made", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.get("/user/integrations");
    const live = await ctx.db
      .select()
      .from(tokens)
      .where(and(eq(tokens.userId, user.id), eq(tokens.kind, "permanent")));
    await ctx.db.insert(tokens).values(
      Array.from({ length: 100 - live.length }, () => ({
        userId: user.id,
        kind: "permanent" as const,
        secretHash: sha256Hex(crypto.randomUUID()),
        createdAt: ctx.now(),
      })),
    );
    const res = await visitor.post("/user/integrations");
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain("already holds 100 permanent tokens");
    expect(html).not.toContain('data-testid="new-token"');
    expect(block(html, "cfg-curl")).toContain(PLACEHOLDER);
    expect(
      (
        await ctx.db
          .select()
          .from(tokens)
          .where(and(eq(tokens.userId, user.id), eq(tokens.kind, "permanent")))
      ).length,
    ).toBe(100);
  });

  test("options: only this account's strategies and albums are used; another user's album is ignored", async () => {
    const { user, visitor } = await signedInUser();
    const other = await signedInUser();
    const album = await ctx.admin("POST", `/api/admin/users/${user.id}/albums`, { name: "Shots" });
    const theirs = await ctx.admin("POST", `/api/admin/users/${other.user.id}/albums`, { name: "Theirs" });
    const html = await (await visitor.get(`/user/integrations?strategy_id=1&album_id=${album.id}&permission=0`)).text();
    expect(block(html, "cfg-curl")).toContain(`-F 'strategy_id=1' -F 'album_id=${album.id}' -F 'permission=0'`);
    expect(JSON.parse(block(html, "cfg-picgo")).picBed.lankong).toMatchObject({ strategyId: "1", albumId: String(album.id), permission: 0 });
    const foreign = await (await other.visitor.get(`/user/integrations?strategy_id=999&album_id=${album.id}`)).text();
    expect(block(foreign, "cfg-curl")).not.toContain("album_id");
    expect(block(foreign, "cfg-curl")).not.toContain("strategy_id");
    expect(foreign).not.toContain("Shots");
    expect(foreign).toContain("Theirs");
    void theirs;
  });
});

describe("every configuration uploads", () => {
  test("curl: the page's line, run by bash with /usr/bin/curl", async () => {
    const { visitor } = await signedInUser();
    const { html, token } = await pageWithNewToken(visitor);
    const line = block(html, "cfg-curl");
    expect(line.split("\n").length).toBe(1);
    expect(line.startsWith("curl ")).toBe(true);
    const dir = temp("imghost-int-curl-");
    writeFileSync(join(dir, "screenshot.png"), png);
    const out = await run(["bash", "-c", line], { cwd: dir });
    expect(out.code, out.stderr).toBe(0);
    const answer = JSON.parse(out.stdout);
    expect(answer.status).toBe(true);
    expect(answer.data.origin_name).toBe("screenshot.png");
    await landed(token, answer.data.key, answer.data.links.url);

    // the placeholder page, with a token the user already has pasted in
    const { user, visitor: second } = await signedInUser();
    const plain = block(await (await second.get("/user/integrations")).text(), "cfg-curl").replace(PLACEHOLDER, user.token);
    const pasted = await run(["bash", "-c", plain], { cwd: dir });
    expect(pasted.code, pasted.stderr).toBe(0);
    const d = JSON.parse(pasted.stdout).data;
    await landed(user.token, d.key, d.links.url);
  });

  test("the shell script: piped as from flameshot, or a file; prints and copies the URL; fails clearly on a refusal", async () => {
    const { user, visitor } = await signedInUser();
    const album = await ctx.admin("POST", `/api/admin/users/${user.id}/albums`, { name: "Screens" });
    const { html, token } = await pageWithNewToken(visitor, { album_id: String(album.id) });
    const text = block(html, "cfg-script");
    // the download is the same script
    const file = await visitor.post("/user/integrations/download/script", { token, album_id: String(album.id), permission: "1" });
    expect(file.status).toBe(200);
    expect(file.headers.get("content-disposition")).toBe('attachment; filename="127.0.0.1-upload.sh"');
    expect(file.headers.get("cache-control")).toBe("no-store");
    expect(await file.text()).toBe(text);

    const dir = temp("imghost-int-script-");
    const script = join(dir, "upload.sh");
    writeFileSync(script, text);
    chmodSync(script, 0o755);
    const bin = join(dir, "bin");
    mkdirSync(bin);
    const clipboard = join(dir, "clipboard");
    writeFileSync(join(bin, "wl-copy"), `#!/bin/sh\ncat > '${clipboard}'\n`);
    chmodSync(join(bin, "wl-copy"), 0o755);
    const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: dir, WAYLAND_DISPLAY: "wayland-0" };

    // `flameshot gui --raw | upload.sh`: the PNG on standard input
    const piped = await run(["bash", script], { env, stdin: png, cwd: dir });
    expect(piped.code, piped.stderr).toBe(0);
    const url = piped.stdout.trim();
    expect(piped.stdout).toBe(`${url}\n`);
    expect(readFileSync(clipboard, "utf8")).toBe(url);
    const key = await keyOfUrl(token, url);
    const row = await landed(token, key, url);
    expect(row.albumId).toBe(album.id);

    // a file path; without jq on the PATH, python3 reads the answer
    writeFileSync(join(dir, "shot.png"), png);
    const lean = join(dir, "lean");
    mkdirSync(lean);
    const python = (
      await run(["python3", "-c", "import sys; print(sys.executable)"], { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? dir } })
    ).stdout.trim();
    for (const [name, target] of [
      ["bash", "/bin/bash"],
      ["curl", "/usr/bin/curl"],
      ["mktemp", "/usr/bin/mktemp"],
      ["rm", "/bin/rm"],
      ["cat", "/bin/cat"],
      ["head", "/usr/bin/head"],
      ["env", "/usr/bin/env"],
      ["python3", python],
    ] as const) {
      if (existsSync(target)) symlinkSync(target, join(lean, name));
    }
    expect(existsSync(join(lean, "jq"))).toBe(false);
    const fromFile = await run([join(lean, "bash"), script, "shot.png"], { env: { PATH: lean, HOME: dir }, cwd: dir });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    const url2 = fromFile.stdout.trim();
    await landed(token, await keyOfUrl(token, url2), url2);

    // refusals: the reason on standard error, status 1, nothing on standard output
    const badToken = await run(["bash", script, "shot.png"], { env: { ...env, IMAGE_HOST_TOKEN: "1|not-a-real-token" }, cwd: dir });
    expect(badToken.code).toBe(1);
    expect(badToken.stdout).toBe("");
    expect(badToken.stderr).toMatch(/^upload failed: HTTP 401: \S/);
    writeFileSync(join(dir, "notes.png"), "not an image at all");
    const notImage = await run(["bash", script, "notes.png"], { env, cwd: dir });
    expect(notImage.code).toBe(1);
    expect(notImage.stderr).toBe("upload failed: HTTP 400: The file content is not a valid PNG image.\n");
    const nothing = await run(["bash", script], { env, stdin: new Uint8Array(), cwd: dir });
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain("nothing arrived on standard input");
    const unreachable = await run(["bash", "-c", `sed 's#^api=.*#api=http://127.0.0.1:9/api/v1/upload#' '${script}' | bash -s shot.png`], { env, cwd: dir });
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain("upload failed: could not reach http://127.0.0.1:9/api/v1/upload");
  });

  /** ShareX's custom uploader format: CustomUploaderItem's serialized properties and the enums they take. */
  const SHAREX_PROPERTIES = [
    "Version",
    "Name",
    "DestinationType",
    "RequestMethod",
    "RequestURL",
    "Parameters",
    "Headers",
    "Body",
    "Arguments",
    "FileFormName",
    "Data",
    "URL",
    "ThumbnailURL",
    "DeletionURL",
    "ErrorMessage",
  ];
  const SHAREX_DESTINATIONS = ["None", "ImageUploader", "TextUploader", "FileUploader", "URLShortener", "URLSharingService"];
  const SHAREX_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
  const SHAREX_BODIES = ["None", "MultipartFormData", "FormURLEncoded", "JSON", "XML", "Binary"];

  /** ShareX's `{json:path}` (a JSONPath, dots and [n]) and `{response}` against an answer; other syntax is not ours. */
  function resolveSharex(template: string, answerText: string): string {
    return template.replace(/\{(json|response)(?::([^}]*))?\}/g, (_, kind: string, path: string | undefined) => {
      if (kind === "response") return answerText;
      let value: any = JSON.parse(answerText);
      for (const part of path!
        .replace(/^\$\.?/, "")
        .split(/\.|\[(\d+)\]/)
        .filter((p) => p !== undefined && p !== ""))
        value = value?.[part];
      return value === undefined || value === null ? "" : String(value);
    });
  }

  /** ShareX's request from a .sxcu: Arguments, then the file under FileFormName (a multipart body, as ShareX sends). */
  async function sharexUpload(sxcu: any, filename: string) {
    expect(sxcu.Body).toBe("MultipartFormData");
    const form = new FormData();
    for (const [k, v] of Object.entries((sxcu.Arguments ?? {}) as Record<string, string>)) form.append(k, v);
    form.append(sxcu.FileFormName, new Blob([new Uint8Array(png)], { type: "image/png" }), filename);
    const url = new URL(sxcu.RequestURL);
    for (const [k, v] of Object.entries((sxcu.Parameters ?? {}) as Record<string, string>)) url.searchParams.set(k, v);
    const res = await fetch(url, { method: sxcu.RequestMethod, headers: { "user-agent": `ShareX/${sxcu.Version}`, ...sxcu.Headers }, body: form });
    return { ok: res.status >= 200 && res.status < 300, status: res.status, text: await res.text() };
  }

  test("ShareX: the downloaded .sxcu follows ShareX's format, and its request uploads", async () => {
    const { user, visitor } = await signedInUser();
    const { html, token } = await pageWithNewToken(visitor, { strategy_id: "1" });
    const res = await visitor.post("/user/integrations/download/sharex", { token, strategy_id: "1", permission: "1" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toBe('attachment; filename="127.0.0.1.sxcu"');
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(res.headers.get("cache-control")).toBe("no-store");
    const text = await res.text();
    expect(text).toBe(block(html, "cfg-sharex")); // the page shows the same file
    const sxcu = JSON.parse(text);

    for (const key of Object.keys(sxcu)) expect(SHAREX_PROPERTIES).toContain(key);
    expect(sxcu.DestinationType.split(/,\s*/).every((d: string) => SHAREX_DESTINATIONS.includes(d))).toBe(true);
    expect(sxcu.DestinationType).toBe("ImageUploader");
    expect(SHAREX_METHODS).toContain(sxcu.RequestMethod);
    expect(SHAREX_BODIES).toContain(sxcu.Body);
    // ShareX refuses a file of version 12.3.1 or older and rewrites the $…$ syntax of 13.7.1 or older
    const [major, minor] = sxcu.Version.split(".").map(Number);
    expect(major > 13 || (major === 13 && minor > 7)).toBe(true);
    expect(sxcu).toMatchObject({
      Name: "127.0.0.1",
      RequestMethod: "POST",
      RequestURL: `${origin}/api/v1/upload`,
      Headers: { Authorization: `Bearer ${token}` },
      Body: "MultipartFormData",
      Arguments: { strategy_id: "1" },
      FileFormName: "file",
      URL: "{json:data.links.url}",
      ThumbnailURL: "{json:data.links.thumbnail_url}",
      ErrorMessage: "{json:message}",
    });
    expect(sxcu.DeletionURL).toBeUndefined();

    const sent = await sharexUpload(sxcu, "ShareX_2026-01-02_10-11-12.png");
    expect(sent.ok, sent.text).toBe(true);
    const url = resolveSharex(sxcu.URL, sent.text);
    const thumbnail = resolveSharex(sxcu.ThumbnailURL, sent.text);
    const answer = JSON.parse(sent.text);
    expect(url).toBe(answer.data.links.url);
    expect(answer.data.origin_name).toBe("ShareX_2026-01-02_10-11-12.png");
    const row = await landed(token, answer.data.key, url);
    expect(row.strategyId).toBe(1);
    expect((await fetch(thumbnail)).status).toBe(200);

    // a refusal: ShareX shows ErrorMessage resolved against the answer
    const refused = await sharexUpload({ ...sxcu, Headers: { Authorization: "Bearer 1|wrong" } }, "x.png");
    expect(refused.status).toBe(401);
    expect(resolveSharex(sxcu.ErrorMessage, refused.text)).toBe(JSON.parse(refused.text).message);
    expect(resolveSharex(sxcu.ErrorMessage, refused.text).length).toBeGreaterThan(0);

    // the placeholder file (GET), with a token the user already has pasted in
    const plain = await visitor.get("/user/integrations/download/sharex");
    expect(plain.headers.get("content-disposition")).toBe('attachment; filename="127.0.0.1.sxcu"');
    const placeholder = JSON.parse(await plain.text());
    expect(placeholder.Headers.Authorization).toBe(`Bearer ${PLACEHOLDER}`);
    placeholder.Headers.Authorization = placeholder.Headers.Authorization.replace(PLACEHOLDER, user.token);
    const pasted = await sharexUpload(placeholder, "pasted.png");
    expect(pasted.ok, pasted.text).toBe(true);
    await landed(user.token, JSON.parse(pasted.text).data.key, resolveSharex(placeholder.URL, pasted.text));
  });

  // ---- PicGo and PicList ------------------------------------------------------------------------------------

  /**
   * PicGo's ctx.Request.request for the request-style options these uploaders pass (method, url, headers,
   * formData with {value, options:{filename}} files): the form's own multipart Content-Type (with its boundary)
   * replaces the bare `multipart/form-data` they set, as the `request` library PicGo kept compatibility with does;
   * undefined headers are not sent; a non-2xx answer rejects. Returns the body as text.
   */
  async function picgoRequest(options: { method: string; url: string; headers: Record<string, string | undefined>; formData?: Record<string, any> }) {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.headers))
      if (v !== undefined && k.toLowerCase() !== "content-type" && k.toLowerCase() !== "connection") headers[k] = v;
    let body: FormData | undefined;
    if (options.formData) {
      body = new FormData();
      for (const [k, v] of Object.entries(options.formData)) {
        if (v && typeof v === "object" && "value" in v && "options" in v) body.append(k, new Blob([v.value]), v.options.filename);
        else body.append(k, String(v));
      }
    }
    const res = await fetch(options.url, { method: options.method, headers, body });
    const text = await res.text();
    if (res.status < 200 || res.status >= 300) throw Object.assign(new Error(`${res.status} - ${text}`), { statusCode: res.status, response: { body: text } });
    return text;
  }

  /** The stand-in for PicGo's ctx that the plugin sees. */
  function picgoStandIn(configKey: string, config: unknown, fileName: string) {
    const uploaders: Record<string, { handle: (ctx: any) => Promise<any> }> = {};
    const listeners: Record<string, (...args: any[]) => any> = {};
    const notifications: unknown[] = [];
    const picgo = {
      getConfig: (key: string) => (key === configKey ? config : undefined),
      helper: { uploader: { register: (name: string, u: any) => (uploaders[name] = u) } },
      on: (event: string, fn: (...args: any[]) => any) => (listeners[event] = fn),
      emit: (_event: string, payload: unknown) => notifications.push(payload),
      Request: { request: picgoRequest },
      request: picgoRequest,
      log: { info() {}, warn() {}, error() {}, success() {} },
      output: [{ fileName, extname: ".png", buffer: Buffer.from(png), width: 40, height: 30 }] as any[],
    };
    return { picgo, uploaders, listeners, notifications };
  }

  /** picgo-plugin-lankong from the npm registry (npm pack, pinned), or null where the registry cannot be reached. */
  let lankong: ((ctx: any) => { register: () => void }) | null | undefined;
  async function loadLankong() {
    if (lankong !== undefined) return lankong;
    const dir = temp("imghost-int-lankong-");
    const packed = await run(["npm", "pack", "picgo-plugin-lankong@1.1.3", "--silent"], {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? dir },
    });
    const tarball = packed.stdout.trim().split("\n").pop();
    if (packed.code !== 0 || !tarball || !existsSync(join(dir, tarball))) {
      console.warn(`npm pack picgo-plugin-lankong failed (${packed.stderr.trim().slice(0, 200)}): its request is reproduced from its source instead`);
      return (lankong = null);
    }
    expect((await run(["tar", "xzf", tarball], { cwd: dir })).code).toBe(0);
    lankong = createRequire(import.meta.url)(join(dir, "package", "dist", "index.js"));
    return lankong;
  }

  /**
   * The upload of lskyplist (PicList) and of picgo-plugin-lankong where it cannot be loaded, reproduced from their
   * source: postOptions (V2: POST <host>/api/v1/upload, `Authorization` as configured, the file, `ssl`, and
   * strategy_id / album_id / permission when set) and handle (success when `status` is true; the URL is
   * data.links.url; otherwise the message is thrown).
   */
  async function lskyUpload(
    c: { host: string; version: string; token: string; strategyId: string; albumId: string; permission: any },
    userAgent: string,
    fileName: string,
  ) {
    if (c.version !== "V2") throw new Error("only V2 speaks /api/v1");
    const host = c.host.replace(/\/$/, "");
    let permission = c.permission?.value;
    if (permission === undefined) permission = c.permission;
    const formData: Record<string, any> = {
      file: { value: Buffer.from(png), options: { filename: fileName } },
      ssl: "true",
      strategy_id: c.strategyId,
      album_id: c.albumId,
      permission,
    };
    if (!c.strategyId) delete formData.strategy_id;
    if (!c.albumId) delete formData.album_id;
    if (!(permission === 0 || permission === 1)) delete formData.permission;
    const headers = {
      "Content-Type": "multipart/form-data",
      "User-Agent": userAgent,
      Connection: "keep-alive",
      Accept: "application/json",
      Authorization: c.token || undefined,
    };
    const body = JSON.parse(await picgoRequest({ method: "POST", url: `${host}/api/v1/upload`, headers, formData }));
    if (body.status !== true) throw new Error(body.message);
    return { imgUrl: body.data.links.url as string, key: body.data.key as string };
  }

  test("PicGo: picgo-plugin-lankong with the page's settings uploads (and its sync delete deletes)", async () => {
    const { user, visitor } = await signedInUser();
    const album = await ctx.admin("POST", `/api/admin/users/${user.id}/albums`, { name: "PicGo" });
    const { html, token } = await pageWithNewToken(visitor, { strategy_id: "1", album_id: String(album.id), permission: "0" });
    const config = JSON.parse(block(html, "cfg-picgo"));
    expect(config.picBed.current).toBe("lankong");
    expect(config.picBed.uploader).toBe("lankong");
    const settings = config.picBed.lankong;
    expect(settings).toMatchObject({
      lskyProVersion: "V2",
      server: origin,
      token: `Bearer ${token}`,
      strategyId: "1",
      albumId: String(album.id),
      permission: 0,
    });
    // the table says the same
    expect(html).toContain(`<code>${origin}</code>`);
    expect(html).toContain(`<code>Bearer ${token}</code>`);

    const plugin = await loadLankong();
    let imgUrl: string;
    let key: string;
    if (plugin) {
      const { picgo, uploaders, listeners, notifications } = picgoStandIn("picBed.lankong", settings, "picgo-shot.png");
      plugin(picgo).register();
      expect(Object.keys(uploaders)).toEqual(["lankong"]);
      await uploaders.lankong!.handle(picgo);
      expect(notifications).toEqual([]);
      ({ imgUrl, id: key } = picgo.output[0]);
      expect(picgo.output[0].buffer).toBeUndefined();
      const row = await landed(token, key, imgUrl);
      expect([row.albumId, row.strategyId, row.isPublic, row.originName]).toEqual([album.id, 1, false, "picgo-shot.png"]);

      // the wrong token: the plugin tells and throws the API's message
      const wrong = picgoStandIn("picBed.lankong", { ...settings, token: "Bearer 1|wrong" }, "w.png");
      plugin(wrong.picgo).register();
      await expect(wrong.uploaders.lankong!.handle(wrong.picgo)).rejects.toThrow(/401/);

      // sync delete (V2): removing the image from PicGo's album deletes it here
      const syncing = picgoStandIn("picBed.lankong", { ...settings, syncDelete: true }, "s.png");
      plugin(syncing.picgo).register();
      await syncing.listeners.remove!([{ type: "lankong", id: key, imgUrl }]);
      expect(syncing.notifications.length).toBe(1);
      expect(await ctx.db.select().from(images).where(eq(images.key, key))).toEqual([]);
      void listeners;
    } else {
      ({ imgUrl, key } = await lskyUpload({ ...settings, host: settings.server, version: settings.lskyProVersion }, "PicGo", "picgo-shot.png"));
      const row = await landed(token, key, imgUrl);
      expect([row.albumId, row.strategyId, row.isPublic]).toEqual([album.id, 1, false]);
    }
  });

  test("PicList: the lskyplist settings, its request reproduced from its source, upload", async () => {
    const { visitor } = await signedInUser();
    const { html, token } = await pageWithNewToken(visitor);
    const config = JSON.parse(block(html, "cfg-piclist"));
    expect(config.picBed.current).toBe("lskyplist");
    const settings = config.picBed.lskyplist;
    expect(settings).toMatchObject({ version: "V2", host: origin, token: `Bearer ${token}`, strategyId: "", albumId: "", permission: 1 });
    const { imgUrl, key } = await lskyUpload(settings, "PicList", "piclist.png");
    const row = await landed(token, key, imgUrl);
    expect(row.isPublic).toBe(true);
    await expect(lskyUpload({ ...settings, token: `Bearer ${PLACEHOLDER}` }, "PicList", "x.png")).rejects.toThrow(/401/);
  });

  test("uPic: the custom host's fields, its request reproduced from its source, upload", async () => {
    const { user, visitor } = await signedInUser();
    const album = await ctx.admin("POST", `/api/admin/users/${user.id}/albums`, { name: "uPic" });
    const { html, token } = await pageWithNewToken(visitor, { album_id: String(album.id) });
    const host = {
      url: byId(html, "upic-url"),
      method: byId(html, "upic-method"),
      field: byId(html, "upic-field"),
      headers: [{ key: byId(html, "upic-header-key"), value: byId(html, "upic-header-value") }],
      bodys: [...html.matchAll(/<code data-upic-body="([^"]+)">[^<]*<\/code> = <code>([^<]*)<\/code>/g)].map((m) => ({
        key: unescape(m[1]!),
        value: unescape(m[2]!),
      })),
      resultPath: byId(html, "upic-result-path"),
      domain: "",
    };
    expect(host).toMatchObject({ url: `${origin}/api/v1/upload`, method: "POST", field: "file", resultPath: '["data","links","url"]' });
    expect(host.headers).toEqual([{ key: "Authorization", value: `Bearer ${token}` }]);
    expect(host.bodys).toEqual([{ key: "album_id", value: String(album.id) }]);

    // CustomUploader._upload: the headers (its default form Content-Type replaced by Alamofire's multipart one),
    // the Bodys, a `key` field with the save key, then the file under File Field
    const fileName = "uPic_20260102.png";
    const form = new FormData();
    for (const b of host.bodys) form.append(b.key, b.value);
    form.append("key", `uPic/${fileName}`);
    form.append(host.field, new Blob([new Uint8Array(png)], { type: "image/png" }), fileName);
    const res = await fetch(host.url, { method: host.method, headers: Object.fromEntries(host.headers.map((h) => [h.key, h.value])), body: form });
    expect(res.status).toBe(200); // Alamofire's validate(): 2xx
    const answer = await res.json();
    // CustomHostUtil.parseResultUrl: ' for ", ， for ",", then the JSON path
    const path = JSON.parse(host.resultPath.replace(/'/g, '"').replace(/，/g, ",")) as (string | number)[];
    let url: any = answer;
    for (const p of path) url = url?.[p];
    expect(typeof url).toBe("string");
    if (host.domain) url = `${host.domain}/${url}`;
    const row = await landed(token, answer.data.key, url);
    expect(row.albumId).toBe(album.id);
  });
});

describe("who may use the page", () => {
  test("anonymous: sent to sign in (the page, the post, the downloads)", async () => {
    const visitor = new Visitor();
    const page = await visitor.get("/user/integrations");
    expect([page.status, page.headers.get("location")]).toEqual([303, "/user/login?next=%2Fuser%2Fintegrations"]);
    const download = await visitor.get("/user/integrations/download/sharex");
    expect(download.status).toBe(303);
    expect(download.headers.get("location")).toStartWith("/user/login");
    for (const path of ["/user/integrations", "/user/integrations/download/sharex"]) {
      const res = await visitor.post(path, {}, { formToken: null });
      expect([res.status, res.headers.get("location")]).toEqual([303, "/user/login"]);
    }
  });

  test("a cross-site post (another Origin, or no form token) is a 403 and makes no token", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.get("/user/integrations");
    const count = async () =>
      (
        await ctx.db
          .select()
          .from(tokens)
          .where(and(eq(tokens.userId, user.id), eq(tokens.kind, "permanent")))
      ).length;
    const before = await count();
    for (const path of ["/user/integrations", "/user/integrations/download/sharex"]) {
      expect((await visitor.post(path, { token: "1|x" }, { origin: "https://evil.example" })).status, path).toBe(403);
      expect((await visitor.post(path, { token: "1|x" }, { formToken: null })).status, path).toBe(403);
    }
    expect(await count()).toBe(before);
  });

  test("the site switch off: 403 for the page, the post and the downloads", async () => {
    const { user, visitor } = await signedInUser();
    await visitor.get("/user/integrations");
    const count = async () => (await ctx.db.select().from(tokens).where(eq(tokens.userId, user.id))).length;
    const before = await count();
    await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: false });
    try {
      expect((await visitor.get("/user/integrations")).status).toBe(403);
      expect((await visitor.get("/user/integrations/download/sharex")).status).toBe(403);
      expect((await visitor.post("/user/integrations")).status).toBe(403);
      expect((await visitor.post("/user/integrations/download/script", { token: "1|x" })).status).toBe(403);
    } finally {
      await ctx.admin("PATCH", "/api/admin/settings", { api_enabled: true });
    }
    expect(await count()).toBe(before);
  });

  test("another user never sees this user's token", async () => {
    const a = await signedInUser();
    const b = await signedInUser();
    const { token } = await pageWithNewToken(a.visitor);
    const secret = token.split("|")[1]!;
    const [row] = await ctx.db
      .select()
      .from(tokens)
      .where(eq(tokens.secretHash, sha256Hex(secret)));
    expect(row!.userId).toBe(a.user.id);
    const seen = [await (await b.visitor.get("/user/integrations")).text()];
    const made = await pageWithNewToken(b.visitor);
    seen.push(
      made.html,
      await (await b.visitor.get("/user/integrations/download/sharex")).text(),
      await (await b.visitor.get("/user/integrations/download/script")).text(),
    );
    for (const text of seen) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(a.user.token.split("|")[1]!);
    }
    const [theirs] = await ctx.db
      .select()
      .from(tokens)
      .where(eq(tokens.secretHash, sha256Hex(made.token.split("|")[1]!)));
    expect(theirs!.userId).toBe(b.user.id);
    // A's own page, after: the token is named by its label, never shown
    expect(await (await a.visitor.get("/user/integrations")).text()).not.toContain(secret);
  });

  test("downloads: an unknown file is a 404, a malformed token a 422", async () => {
    const { visitor } = await signedInUser();
    await visitor.get("/user/integrations");
    expect((await visitor.get("/user/integrations/download/other")).status).toBe(404);
    expect((await visitor.post("/user/integrations/download/sharex", { token: 'a b"c' })).status).toBe(422);
    const empty = await visitor.post("/user/integrations/download/sharex", {});
    expect(empty.status).toBe(200);
    expect(JSON.parse(await empty.text()).Headers.Authorization).toBe(`Bearer ${PLACEHOLDER}`);
  });
});
