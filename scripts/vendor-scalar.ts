/**
 * The API reference's browser bundle, vendored: `@scalar/api-reference`'s self-contained `standalone.js` (one file,
 * no chunks) copied into src/web/assets/vendor/scalar/ beside its licence and version, so that the service ships
 * 4 MB instead of the package's dependency tree (docs/decisions/vendored-scalar-bundle.md). The package is a
 * devDependency; after upgrading it, run this.
 *
 *   bun run vendor:scalar            copies the bundle, writes LICENSE and VERSION
 *   bun run vendor:scalar --check    writes nothing; exits 1 when the vendored files differ from the installed package
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const PACKAGE = "@scalar/api-reference";
export const VENDOR_DIR = join(import.meta.dir, "../src/web/assets/vendor/scalar");

const LICENSE = `MIT License

Copyright (c) 2023-present Scalar

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.

standalone.js is the browser build of ${PACKAGE} (https://github.com/scalar/scalar, packages/api-reference),
copied unchanged from the npm package by scripts/vendor-scalar.ts. It bundles third-party code under its own
licences, whose notices are kept in the file's /*! ... */ comments.
`;

/** What the vendored folder should hold, from the installed package. */
function expected(): Record<string, string | Uint8Array> {
  const entry = Bun.resolveSync(PACKAGE, import.meta.dir);
  // the standalone bundle is not in the package exports; it sits beside the main entry
  const bundle = join(dirname(entry), "browser/standalone.js");
  let dir = dirname(entry);
  while (!existsSync(join(dir, "package.json"))) dir = dirname(dir);
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string };
  return { "standalone.js": readFileSync(bundle), LICENSE, VERSION: `${PACKAGE} ${version}\n` };
}

if (import.meta.main) {
  const check = process.argv.includes("--check");
  const files = expected();
  const stale: string[] = [];
  for (const [name, content] of Object.entries(files)) {
    const path = join(VENDOR_DIR, name);
    const bytes = typeof content === "string" ? Buffer.from(content) : content;
    const same = existsSync(path) && Buffer.compare(readFileSync(path), bytes) === 0;
    if (same) continue;
    if (check) stale.push(path);
    else {
      mkdirSync(VENDOR_DIR, { recursive: true });
      writeFileSync(path, bytes);
      console.log(`wrote ${path}`);
    }
  }
  if (stale.length > 0) {
    console.error(`out of date (run bun run vendor:scalar): ${stale.join(", ")}`);
    process.exit(1);
  }
  if (check) console.log(`vendored Scalar bundle matches ${(files.VERSION as string).trim()}`);
}
