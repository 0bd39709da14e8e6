/**
 * Where a restore may write: the rule that a crafted manifest cannot get around.
 *
 * A manifest names the directories its objects go to (the roots of local strategies, as configured where the
 * backup was made). A restore writes only:
 *  - under the target DATA_DIR (the default root DATA_DIR/uploads, and roots configured inside DATA_DIR), and
 *  - under directories the operator confirms on the command line (`--allow-root DIR`, repeatable; DIR or at least
 *    its parent must exist: nothing is created above it);
 * and never into DATA_DIR/postgres (the database directory), nor into a root that holds it, nor into the files the
 * server reads from DATA_DIR (admin-token, webhook-secret-key, server.lock, the legacy db/). Places are compared as they are, not as
 * they are spelled: each root's real path is the realpath of its deepest existing ancestor with the rest appended
 * (storage/location.ts), so a symlink or `..` leads nowhere it could not lead by its plain name, and a dangling
 * symlink (which would write wherever it is later pointed) is refused. Every root is checked before anything is
 * written; all refusals are reported together.
 */
import { relative, resolve, sep } from "node:path";
import { isWithin, LocationError, realLocation } from "../../storage/location.ts";
import { BackupError, type Manifest } from "./format.ts";

/** DATA_DIR entries a root may not be, or be inside: the server reads them, a restore never writes objects there. */
const RESERVED = ["postgres", "admin-token", "webhook-secret-key", "server.lock", "db"];

interface RootPlan {
  /** Roots by archive prefix: the base they are staged in (`null`: DATA_DIR) and their path below it. */
  roots: Map<string, { base: string | null; relative: string }>;
  /** Directories outside DATA_DIR the objects go to, each confirmed; none inside another. */
  outside: string[];
}

/** The real location of a path, or the reason it has none. */
async function real(path: string): Promise<string> {
  try {
    return (await realLocation(path)).real;
  } catch (e) {
    if (e instanceof LocationError) throw new BackupError(e.message);
    throw e;
  }
}

/**
 * Checks every root of the manifest against the rule and plans where each is staged. `dataDir` is DATA_DIR's real
 * location; `allowRoots` the directories the operator confirmed.
 */
export async function planRoots(manifest: Manifest, dataDir: string, allowRoots: string[]): Promise<RootPlan> {
  const database = `${dataDir}${sep}postgres`;
  const confirmed: string[] = [];
  const refusals: string[] = [];
  for (const dir of allowRoots) {
    try {
      const { missing, real: at } = await realLocation(dir);
      if (missing.length > 1) refusals.push(`--allow-root ${dir}: neither it nor its parent exists (a restore creates nothing above a confirmed directory)`);
      else if (isWithin(database, at) || isWithin(at, database))
        refusals.push(`--allow-root ${dir} (${at}): holds or is inside the database directory ${database}`);
      else confirmed.push(at);
    } catch (e) {
      refusals.push(`--allow-root ${dir}: ${(e as Error).message}`);
    }
  }

  const placed: { prefix: string; at: string; label: string }[] = [];
  for (const root of manifest.storage.roots) {
    const label = `the root of local strategies ${root.strategy_ids.join(", ")}`;
    if (root.config_root === null) {
      placed.push({ prefix: root.prefix, at: `${dataDir}${sep}uploads`, label });
      continue;
    }
    let at: string;
    try {
      at = await real(root.config_root);
    } catch (e) {
      refusals.push(`${label}, ${JSON.stringify(root.config_root)}: ${(e as Error).message}`);
      continue;
    }
    const shown = `${label}, ${JSON.stringify(root.config_root)}${resolve(root.config_root) === at ? "" : ` (really ${at})`}`;
    if (isWithin(at, database) || isWithin(database, at)) {
      refusals.push(`${shown}: it is or holds the database directory ${database}; a restore never writes there`);
    } else if (at === dataDir) {
      refusals.push(`${shown}: it is DATA_DIR itself; restore its objects by hand`);
    } else if (isWithin(at, dataDir)) {
      const first = relative(dataDir, at).split(sep)[0]!;
      if (RESERVED.includes(first) || first.startsWith(".restor"))
        refusals.push(`${shown}: it is DATA_DIR's own ${first}; a restore never writes objects there`);
      else placed.push({ prefix: root.prefix, at, label });
    } else if (confirmed.some((c) => isWithin(at, c))) {
      placed.push({ prefix: root.prefix, at, label });
    } else {
      refusals.push(`${shown}: outside DATA_DIR (${dataDir}) and not confirmed with --allow-root`);
    }
  }
  if (refusals.length > 0) {
    throw new BackupError(`the archive names places this restore may not write to: nothing was restored (${refusals.length} refused)`, [
      ...refusals,
      "A restore writes only under DATA_DIR and under directories confirmed with --allow-root DIR (repeatable), never into DATA_DIR/postgres.",
      "If a root outside DATA_DIR is yours, check the manifest (tar -xOf FILE manifest.json), then confirm it: backup restore FILE --allow-root DIR.",
    ]);
  }

  // outside DATA_DIR: each root is staged inside the outermost planned root that holds it
  const outsideRoots = [...new Set(placed.filter((p) => !isWithin(p.at, dataDir)).map((p) => p.at))];
  const outside = outsideRoots.filter((at) => !outsideRoots.some((other) => other !== at && isWithin(at, other)));
  const roots = new Map<string, { base: string | null; relative: string }>();
  for (const p of placed) {
    if (isWithin(p.at, dataDir)) roots.set(p.prefix, { base: null, relative: relative(dataDir, p.at) });
    else {
      const base = outside.find((o) => isWithin(p.at, o))!;
      roots.set(p.prefix, { base, relative: relative(base, p.at) });
    }
  }
  return { roots, outside };
}
