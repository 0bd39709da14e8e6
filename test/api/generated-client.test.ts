/**
 * A third-party client generated from the spec (@hey-api/openapi-ts, fetch client) compiles under the project's
 * strict settings and works against the real HTTP server: upload (multipart through the SDK), list, delete.
 * The client is generated into test/.generated/hey-api/ (gitignored) when missing or stale.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { CLIENT_DIR, ensureClient } from "../support/generated-client.ts";
import { createTestContext, type TestContext, type TestUser } from "../support/harness.ts";
import { makeImage } from "../support/images.ts";
import { expectStatus } from "../support/status.ts";

// servers, databases and images on a busy 2-core machine take longer than bun's default 5 s (the preload's setting reaches only the first file)
setDefaultTimeout(60_000);

const root = resolve(import.meta.dir, "..", "..");
const generatedRoot = resolve(CLIENT_DIR, "..");

/** Compiled with the generated code: the SDK's types must be usable and mean what the spec says. */
const USAGE = `import { createClient } from "./hey-api/client";
import { deleteImage, listImages, uploadImage, type Image, type ImagePage } from "./hey-api";

const client = createClient({ baseUrl: "http://127.0.0.1:1", auth: () => "token" });

export async function usage(): Promise<void> {
  const file = new File([new Uint8Array(1)], "a.png", { type: "image/png" });
  const uploaded = await uploadImage({ client, body: { file, permission: 1 } });
  const image: Image | undefined = uploaded.data?.data;
  if (image) await deleteImage({ client, path: { key: image.key } });
  const listed = await listImages({ client, query: { per_page: 10, page: 1 } });
  const page: ImagePage | undefined = listed.data?.data;
  const total: number | undefined = page?.total;
  void total;
  // @ts-expect-error per_page is an integer
  await listImages({ client, query: { per_page: "10" } });
  // @ts-expect-error the key is required
  await deleteImage({ client, path: {} });
  // @ts-expect-error the file is required
  await uploadImage({ client, body: { permission: 1 } });
}
`;

let ctx: TestContext;
let server: ReturnType<typeof Bun.serve>;
let user: TestUser;
let sdk: any;
let createClient: any;

beforeAll(async () => {
  await ensureClient();
  // imported by path at run time: the folder does not exist before the first generation (and `tsc -p .` runs first)
  sdk = await import(join(CLIENT_DIR, "index.ts"));
  ({ createClient } = await import(join(CLIENT_DIR, "client/index.ts")));
  ctx = await createTestContext();
  user = await ctx.createUser();
  server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: ctx.app.fetch });
}, 120_000);

afterAll(async () => {
  await server?.stop(true);
  await ctx?.close();
});

describe("the @hey-api/openapi-ts client", () => {
  test("compiles with the project's strict TypeScript settings", async () => {
    writeFileSync(join(generatedRoot, "usage.ts"), USAGE);
    writeFileSync(
      join(generatedRoot, "tsconfig.json"),
      JSON.stringify({ extends: join(root, "tsconfig.json"), include: ["hey-api/**/*.ts", "usage.ts"] }, null, 2),
    );
    const tsc = Bun.spawn([process.execPath, join(root, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", join(generatedRoot, "tsconfig.json")], {
      cwd: root,
      stdout: "pipe",
      stderr: "pipe",
    });
    const timer = setTimeout(() => tsc.kill(), 100_000);
    const [code, out, err] = await Promise.all([tsc.exited, new Response(tsc.stdout).text(), new Response(tsc.stderr).text()]);
    clearTimeout(timer);
    if (code !== 0) console.error(out, err);
    expect(code).toBe(0);
  }, 120_000);

  test("uploads, lists and deletes an image on the real server", async () => {
    const client = createClient({ baseUrl: `http://127.0.0.1:${server.port}`, auth: () => user.token });
    const png = await makeImage("png", 40, 30);
    const file = new File([new Uint8Array(png)], "generated-client.png", { type: "image/png" });

    const uploaded = await sdk.uploadImage({ client, body: { file, permission: 1 } });
    expectStatus(uploaded, 200);
    expect(uploaded.error).toBeUndefined();
    const image = uploaded.data.data;
    expect(image).toMatchObject({ origin_name: "generated-client.png", mimetype: "image/png", extension: "png", width: 40, height: 30 });

    const listed = await sdk.listImages({ client, query: { per_page: 10, page: 1 } });
    expectStatus(listed, 200);
    expect(listed.data.data.total).toBe(1);
    expect(listed.data.data.data.map((i: { key: string }) => i.key)).toEqual([image.key]);

    const deleted = await sdk.deleteImage({ client, path: { key: image.key } });
    expectStatus(deleted, 200);
    expect(deleted.data).toEqual({ status: true, message: "success", data: null });

    const after = await sdk.listImages({ client, query: { per_page: 10, page: 1 } });
    expect(after.data.data.total).toBe(0);
    expect(after.data.data.data).toEqual([]);

    // errors come back typed, not thrown: a deleted key is 404 with the error envelope
    const again = await sdk.deleteImage({ client, path: { key: image.key } });
    expectStatus(again, 404);
    expect(again.error).toMatchObject({ status: false, data: null });
  }, 60_000);
});
