/** The staging directories a restore builds in, renamed into place only when complete. */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readdir, rename, rm, rmdir, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { BackupError, fsyncDirectory } from "./format.ts";

/** Refuses a directory that exists and holds anything (`lost+found` of a fresh filesystem aside). */
export async function assertEmpty(dir: string, label: string) {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    if (code === "ENOTDIR") throw new BackupError(`${label} ${dir} is a file, not a directory`);
    throw e;
  }
  const found = entries.filter((n) => n !== "lost+found");
  if (found.length > 0) {
    throw new BackupError(
      `${label} ${dir} is not empty (${found.slice(0, 5).join(", ")}${found.length > 5 ? ", …" : ""}): restore only into an empty or new directory`,
      ["Stop the server, move the directory aside (keep it until the restored one works), then restore."],
    );
  }
}

export interface Staged {
  /** Where to build the directory's contents. */
  path: string;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/**
 * A staging directory for `target` (absent or empty): beside it, renamed over it at commit (atomic); inside it
 * when it is a mount point (an empty volume, which cannot be renamed over) or when `inside` is asked (a root
 * outside DATA_DIR: a restore writes nothing beside a directory the operator confirmed, only in it), its entries
 * moved up at commit. A target created here is removed again by abort.
 */
export async function stageDirectory(target: string, options: { inside?: boolean } = {}): Promise<Staged> {
  const suffix = randomBytes(4).toString("hex");
  const parent = dirname(target);
  const exists = existsSync(target);
  if (!options.inside) await mkdir(parent, { recursive: true });
  const mountPoint = exists && (await stat(target)).dev !== (await stat(parent)).dev;
  if (!mountPoint && !options.inside) {
    const path = `${target}.restoring-${suffix}`;
    await mkdir(path, { mode: 0o755 });
    return {
      path,
      async commit() {
        await assertEmpty(target, basename(target));
        if (exists) await rmdir(target).catch(() => {}); // empty (checked); rename replaces an empty directory anyway
        await rename(path, target);
        await fsyncDirectory(parent);
      },
      abort: () => rm(path, { recursive: true, force: true }),
    };
  }
  // only `target` and directories between it and its deepest existing ancestor are created (removed again by abort)
  const created = exists ? undefined : await mkdir(target, { recursive: true, mode: 0o755 });
  const path = join(target, `.restoring-${suffix}`);
  await mkdir(path, { mode: 0o700 });
  return {
    path,
    async commit() {
      // the database last: until it is in place, DATA_DIR holds no database a server would start on
      const entries = (await readdir(path)).sort((a, b) => Number(a === "postgres") - Number(b === "postgres"));
      for (const name of entries) await rename(join(path, name), join(target, name));
      await rmdir(path);
      await fsyncDirectory(target);
    },
    async abort() {
      await rm(path, { recursive: true, force: true });
      if (created) await rm(created, { recursive: true, force: true });
    },
  };
}
