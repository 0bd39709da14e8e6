/**
 * The passkey pages' browser library, vendored: `@simplewebauthn/browser`'s UMD bundle (one file, 13 KB, no
 * dependencies) copied into src/web/assets/vendor/simplewebauthn/ with its licence and version, and served by the
 * pages themselves: no CDN. The package is a devDependency; after upgrading it, run this.
 *
 *   bun run vendor:simplewebauthn            copies the bundle, LICENSE.md and VERSION
 *   bun run vendor:simplewebauthn --check    writes nothing; exits 1 when the vendored files differ
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const PACKAGE = "@simplewebauthn/browser";
const VENDOR_DIR = join(import.meta.dir, "../src/web/assets/vendor/simplewebauthn");

function expected(): Record<string, string> {
  let dir = dirname(Bun.resolveSync(PACKAGE, import.meta.dir));
  // the package keeps a package.json in esm/ too (its module type): the root one names the package
  while (!existsSync(join(dir, "LICENSE.md"))) dir = dirname(dir);
  const { version } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string };
  return {
    "index.umd.min.js": readFileSync(join(dir, "dist/bundle/index.umd.min.js"), "utf8"),
    "LICENSE.md": readFileSync(join(dir, "LICENSE.md"), "utf8"),
    VERSION: `${version}\n`,
  };
}

const files = expected();
if (process.argv.includes("--check")) {
  const stale = Object.entries(files).filter(([name, body]) => !existsSync(join(VENDOR_DIR, name)) || readFileSync(join(VENDOR_DIR, name), "utf8") !== body);
  if (stale.length > 0) {
    console.error(`vendored ${PACKAGE} differs from the installed package: ${stale.map(([n]) => n).join(", ")}; run bun run vendor:simplewebauthn`);
    process.exit(1);
  }
  console.log(`vendored ${PACKAGE} ${files.VERSION!.trim()} matches`);
} else {
  mkdirSync(VENDOR_DIR, { recursive: true });
  for (const [name, body] of Object.entries(files)) writeFileSync(join(VENDOR_DIR, name), body);
  console.log(`vendored ${PACKAGE} ${files.VERSION!.trim()} into ${VENDOR_DIR}`);
}
