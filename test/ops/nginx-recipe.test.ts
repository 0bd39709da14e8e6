/**
 * The nginx recipe (deploy/nginx.conf), run as written in front of the app: nginx's own refusals
 * answer the API's JSON envelope, not nginx's HTML pages, and a normal call goes through.
 *
 * The recipe is used as committed, with only what a loopback run must change: the listen addresses (loopback ports,
 * no IPv6), the certificate (a self-signed one made here), the upstream (the app on a loopback port), and
 * proxy_read_timeout (1 s, to see a 504 without waiting 90 s). Each change must match the recipe's text, so a recipe
 * that drifts fails here instead of being tested in some other shape. nginx runs in the foreground with a temporary
 * prefix (-p), config (-c), pid and logs, and is stopped at the end.
 *
 * Needs an `nginx` binary (Debian: apt-get install -y nginx-light, or nginx) and openssl; skipped with a message without.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext, type TestContext } from "../support/harness.ts";
import { freePort } from "../support/processes.ts";

setDefaultTimeout(60_000);

const RECIPE = join(import.meta.dir, "..", "..", "deploy", "nginx.conf");
const nginxBinary = Bun.which("nginx") ?? ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"].find((p) => existsSync(p));
const opensslBinary = Bun.which("openssl");
const skip = !nginxBinary || !opensslBinary;
if (skip) {
  console.warn(
    `nginx-recipe: skipped: no ${nginxBinary ? "openssl" : "nginx"} binary here. ` +
      "CI installs them with: apt-get install -y nginx-light openssl (Debian; or the 'nginx' package).",
  );
}

/** `text` with `from` replaced, which must occur: the recipe's own spelling is what is tested. */
function swap(text: string, from: string | RegExp, to: string): string {
  const found = typeof from === "string" ? text.includes(from) : from.test(text);
  if (!found) throw new Error(`deploy/nginx.conf no longer contains ${String(from)}: update test/ops/nginx-recipe.test.ts with the recipe`);
  return typeof from === "string" ? text.replaceAll(from, to) : text.replace(from, to);
}

let ctx: TestContext;
let app: ReturnType<typeof Bun.serve>;
let nginx: ReturnType<typeof Bun.spawn> | undefined;
let dir: string;
let front: string;
/** Requests that reached the app, by path. */
const reached: string[] = [];

const envelope = (message: string) => ({ status: false, message, data: null });

/** A request to nginx's TLS port (its certificate is the self-signed one made here). */
const viaNginx = (path: string, init: RequestInit = {}) => fetch(`${front}${path}`, { ...init, tls: { rejectUnauthorized: false } } as RequestInit);

async function answer(res: Response) {
  return { status: res.status, type: res.headers.get("content-type"), body: JSON.parse(await res.text()) as unknown };
}

describe.skipIf(skip)("the nginx recipe in front of the app", () => {
  beforeAll(async () => {
    ctx = await createTestContext();
    app = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const { pathname } = new URL(req.url);
        reached.push(pathname);
        // an answer slower than the (shortened) proxy_read_timeout
        if (pathname === "/__test/slow") return Bun.sleep(4000).then(() => new Response("late"));
        return ctx.app.fetch(req);
      },
    });

    dir = mkdtempSync(join(tmpdir(), "imghost-nginx-"));
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    const made = Bun.spawnSync(
      [opensslBinary!, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost"],
      {
        stderr: "pipe",
      },
    );
    if (made.exitCode !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr.toString()}`);

    const httpsPort = await freePort();
    const httpPort = await freePort();
    let site = readFileSync(RECIPE, "utf8");
    site = swap(site, /^\s*listen 443 ssl http2;$/m, `\n    listen 127.0.0.1:${httpsPort} ssl http2;`);
    site = swap(site, /^\s*listen \[::\]:443 ssl http2;$/m, "");
    site = swap(site, /^\s*listen 80;$/m, `\n    listen 127.0.0.1:${httpPort};`);
    site = swap(site, /^\s*listen \[::\]:80;$/m, "");
    site = swap(site, "/etc/letsencrypt/live/img.example.com/fullchain.pem", cert);
    site = swap(site, "/etc/letsencrypt/live/img.example.com/privkey.pem", key);
    site = swap(site, /^(\s*)server 127\.0\.0\.1:3000;$/m, `$1server 127.0.0.1:${app.port};`);
    site = swap(site, "proxy_read_timeout  90s;", "proxy_read_timeout  1s;");
    writeFileSync(join(dir, "image-host.conf"), site);

    // the recipe is "included inside http { }": this is the rest of an nginx.conf, everything in the temp dir
    const temp = (name: string) => join(dir, name);
    writeFileSync(
      join(dir, "nginx.conf"),
      [
        "daemon off;",
        // one process: no worker switching to 'nobody', who could not enter the temp dir
        "master_process off;",
        "worker_processes 1;",
        `error_log ${temp("error.log")} info;`,
        `pid ${temp("nginx.pid")};`,
        "events { worker_connections 256; }",
        "http {",
        `  access_log ${temp("access.log")};`,
        `  client_body_temp_path ${temp("body")}; proxy_temp_path ${temp("proxy")}; fastcgi_temp_path ${temp("fastcgi")};`,
        `  uwsgi_temp_path ${temp("uwsgi")}; scgi_temp_path ${temp("scgi")};`,
        "  default_type application/octet-stream;",
        `  include ${temp("image-host.conf")};`,
        "}",
        "",
      ].join("\n"),
    );
    const args = [nginxBinary!, "-p", dir, "-c", temp("nginx.conf"), "-e", temp("error.log")];
    const check = Bun.spawnSync([...args, "-t"], { stderr: "pipe" });
    if (check.exitCode !== 0) throw new Error(`nginx -t refused the recipe:\n${check.stderr.toString()}`);

    nginx = Bun.spawn(args, { stdout: "ignore", stderr: "pipe" });
    front = `https://127.0.0.1:${httpsPort}`;
    for (let i = 0; ; i++) {
      if (nginx.exitCode !== null) throw new Error(`nginx exited (${nginx.exitCode}):\n${readFileSync(temp("error.log"), "utf8")}`);
      try {
        if ((await viaNginx("/health")).status === 200) break;
      } catch {}
      if (i > 100) throw new Error(`nginx did not answer on ${front}:\n${readFileSync(temp("error.log"), "utf8")}`);
      await Bun.sleep(100);
    }
  });

  afterAll(async () => {
    if (nginx) {
      nginx.kill("SIGTERM");
      await nginx.exited;
    }
    await app?.stop(true);
    await ctx?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("a normal API call goes through, and the app's own errors pass unchanged", async () => {
    const alice = await ctx.createUser();
    const profile = await viaNginx("/api/v1/profile", { headers: ctx.bearer(alice.token) });
    expect(profile.status).toBe(200);
    expect(((await profile.json()) as { data: { username: string } }).data.username).toBe(alice.username);
    // an error of the app itself is its own envelope, not replaced by nginx
    const anonymous = await answer(await viaNginx("/api/v1/profile"));
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ status: false, data: null });
    expect((anonymous.body as { message: string }).message).not.toBe("The image host is not reachable right now.");
  });

  test("an upload over client_max_body_size: 413 in the JSON envelope, and the app never sees it", async () => {
    const before = reached.filter((p) => p === "/api/v1/upload").length;
    const res = await viaNginx("/api/v1/upload", {
      method: "POST",
      headers: { authorization: "Bearer 1|whatever", "content-type": "multipart/form-data; boundary=x" },
      body: new Uint8Array(12 * 1024 * 1024),
    });
    const refused = await answer(res);
    expect(refused).toEqual({
      status: 413,
      type: "application/json",
      body: envelope("The request body is larger than this server accepts."),
    });
    expect(reached.filter((p) => p === "/api/v1/upload").length).toBe(before);
  });

  test("an app slower than proxy_read_timeout: 504 in the JSON envelope", async () => {
    expect(await answer(await viaNginx("/__test/slow"))).toEqual({
      status: 504,
      type: "application/json",
      body: envelope("The image host did not answer in time."),
    });
  });

  // last: it stops the app
  test("the app down: 502 in the JSON envelope", async () => {
    await app.stop(true);
    const down = await answer(await viaNginx("/api/v1/profile"));
    expect(down).toEqual({ status: 502, type: "application/json", body: envelope("The image host is not reachable right now.") });
    // an upload too, as an uploader would send it
    const upload = await answer(await viaNginx("/api/v1/upload", { method: "POST", body: new FormData() }));
    expect(upload).toEqual(down);
  });
});
