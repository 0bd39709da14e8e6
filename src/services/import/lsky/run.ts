/**
 * The Lsky Pro import, phase by phase: strategies, groups, users, albums, images, tokens. Each record is imported in
 * one transaction with its mapping row (db/repositories/imports.ts), after its files are in place, so a run stopped
 * anywhere leaves whole records only and the next run continues after them; a mapped record is skipped. Nothing is
 * granted that the source did not grant: refusals are listed with their reason. See docs/moving-from-lsky.md and
 * docs/decisions/lsky-import.md.
 */
import { realpathSync } from "node:fs";
import { resolve, sep } from "node:path";
import { stat } from "node:fs/promises";
import { eq, sql } from "drizzle-orm";
import type { Db, Executor } from "../../../db/client.ts";
import {
  accountTaken,
  findTwinStrategy,
  type ImportKind,
  imageKeyTaken,
  importedIds,
  insertImportedImage,
  insertKeepingId,
  livePermanentTokens,
  recordImported,
  reserveIdsUpTo,
  storedPathTaken,
  tokenHashTaken,
} from "../../../db/repositories/imports.ts";
import { ALBUMS_PER_ACCOUNT } from "../../../db/repositories/albums.ts";
import { albums, groupStrategies, groups, strategies, tokens, users } from "../../../db/schema.ts";
import { inspectImage } from "../../../images/inspect.ts";
import type { Storage, StorageRegistry } from "../../../storage/index.ts";
import { StorageError } from "../../../storage/index.ts";
import { randomToken } from "../../secrets.ts";
import { TOKEN_LIMITS } from "../../tokens.ts";
import {
  canonicalMime,
  contentMatches,
  groupValues,
  isBcrypt,
  LSKY_DRIVERS,
  lskyPathname,
  lskyUrlOf,
  plausibleEmail,
  servablePath,
  strategyPlan,
  usernameCandidates,
} from "./mapping.ts";
import { type LskyImage, type LskySource, type LskyStrategy, wallClockToDate } from "./source.ts";

/** The source's name in the mapping table. */
export const SOURCE = "lsky";
const BATCH = 200;

export interface ImportOptions {
  /** Lsky's local uploads root (storage/app/uploads). */
  uploads: string;
  /** Roots of local strategies stored elsewhere, by Lsky strategy id. */
  strategyRoots: Map<number, string>;
  /** Keep local files where they are (the strategy's root is Lsky's) instead of copying them into DATA_DIR/uploads. */
  adopt: boolean;
  dryRun: boolean;
  /** Lsky's time zone: its timestamps are the site's wall-clock time (config/app.php: PRC). */
  timeZone: string;
  onProgress?: (p: Progress) => void;
}

export interface Progress {
  phase: ImportKind;
  done: number;
  total: number;
}

export interface ImportTarget {
  db: Db;
  storage: StorageRegistry;
  baseUrl: string;
  clock: () => Date;
}

type Tally = { imported: number; skipped: number; refused: number };

export interface Refusal {
  kind: ImportKind;
  lsky_id: number;
  /** What it is, in words a reader recognises: an email, a key, a name. */
  what: string;
  reason: string;
}

export interface ImportReport {
  source: string;
  dry_run: boolean;
  adopt: boolean;
  counts: Record<ImportKind, Tally>;
  refused: Refusal[];
  /** Images kept under another path than Lsky's, and why: their old address no longer names them. */
  moved: { lsky_id: number; key: string; old_url: string; new_url: string; reason: string }[];
  /** Settings and details not carried over, and other remarks. */
  notes: string[];
  /** The strategies imported, with what serves their old addresses. */
  strategies: { lsky_id: number; id: number | null; name: string; driver: string; root?: string; legacy_url?: string | null }[];
  duration_ms: number;
}

const KINDS: ImportKind[] = ["strategy", "group", "user", "album", "image", "token"];

class Run {
  readonly report: ImportReport;
  /** Lsky id → our id (negative: would be created, in a dry run), per kind. */
  private readonly ids = new Map<ImportKind, Map<number, number>>(KINDS.map((k) => [k, new Map()]));
  /** Why a record was not imported, for the records that depend on it. */
  private readonly refusedWhy = new Map<ImportKind, Map<number, string>>(KINDS.map((k) => [k, new Map()]));
  private readonly storages = new Map<number, { lsky: LskyStrategy; storage: Storage; driver: "local" | "s3"; sourceRoot?: string; sameFiles: boolean }>();
  /** What a dry run (or this run) has claimed already: names and paths it would write. */
  private readonly claimed = {
    paths: new Set<string>(),
    names: new Set<string>(),
    keys: new Set<string>(),
    usernames: new Set<string>(),
    emails: new Set<string>(),
  };
  private placeholder = -1;
  private readonly notes = new Set<string>();

  constructor(
    private readonly source: LskySource,
    private readonly target: ImportTarget,
    private readonly options: ImportOptions,
  ) {
    this.report = {
      source: source.shown,
      dry_run: options.dryRun,
      adopt: options.adopt,
      counts: Object.fromEntries(KINDS.map((k) => [k, { imported: 0, skipped: 0, refused: 0 }])) as Record<ImportKind, Tally>,
      refused: [],
      moved: [],
      notes: [],
      strategies: [],
      duration_ms: 0,
    };
  }

  private get db() {
    return this.target.db;
  }

  private note(text: string) {
    this.notes.add(text);
  }

  private refuse(kind: ImportKind, id: number, what: string, reason: string) {
    this.report.counts[kind].refused++;
    this.report.refused.push({ kind, lsky_id: id, what, reason });
    this.refusedWhy.get(kind)!.set(id, reason);
  }

  private skipped(kind: ImportKind, id: number, ours: number) {
    this.report.counts[kind].skipped++;
    this.ids.get(kind)!.set(id, ours);
  }

  private imported(kind: ImportKind, id: number, ours: number) {
    this.report.counts[kind].imported++;
    this.ids.get(kind)!.set(id, ours);
  }

  private idOf(kind: ImportKind, id: number | null): number | undefined {
    return id === null ? undefined : this.ids.get(kind)!.get(id);
  }

  private whyNot(kind: ImportKind, id: number): string {
    return this.refusedWhy.get(kind)!.get(id) ?? "not found in the Lsky Pro database";
  }

  /** Runs `write` in a transaction that also records the mapping; in a dry run, a placeholder id and no write. */
  private async create(kind: ImportKind, lskyId: number, write: (tx: Executor) => Promise<number>): Promise<number> {
    if (this.options.dryRun) return this.placeholder--;
    return this.db.transaction(async (tx) => {
      const id = await write(tx);
      await recordImported(tx, SOURCE, kind, lskyId, id);
      return id;
    });
  }

  private time(text: string | null): Date | undefined {
    return wallClockToDate(text, this.options.timeZone) ?? undefined;
  }

  private progress(phase: ImportKind, done: number, total: number) {
    this.options.onProgress?.({ phase, done, total });
  }

  async run(): Promise<ImportReport> {
    const started = performance.now();
    await this.strategies();
    await this.groups();
    await this.users();
    await this.albums();
    await this.images();
    await this.tokens();
    this.report.notes = [...this.notes];
    this.report.duration_ms = Math.round(performance.now() - started);
    return this.report;
  }

  private async strategies() {
    const list = await this.source.strategies();
    const mapped = await importedIds(
      this.db,
      SOURCE,
      "strategy",
      list.map((s) => s.id),
    );
    if (!this.options.dryRun) await reserveIdsUpTo(this.db, "strategies", await this.source.maxId("strategies"));
    this.progress("strategy", 0, list.length);
    let done = 0;
    for (const s of list) {
      const sourceRoot = resolve(this.options.strategyRoots.get(s.id) ?? this.options.uploads);
      const plan = strategyPlan(s, sourceRoot, this.options.adopt ? sourceRoot : undefined, this.target.baseUrl);
      const shown = { lsky_id: s.id, name: s.name, driver: LSKY_DRIVERS[s.key] ?? `#${s.key}` };
      if (!plan.ok) {
        this.refuse("strategy", s.id, `strategy "${s.name}"`, plan.reason);
        this.report.strategies.push({ ...shown, id: null });
        this.progress("strategy", ++done, list.length);
        continue;
      }
      for (const n of plan.notes) this.note(`Strategy ${s.id} "${s.name}": ${n}.`);
      const existing = mapped.get(s.id);
      let id: number;
      let config = plan.config;
      if (existing !== undefined) {
        const [row] = await this.db.select().from(strategies).where(eq(strategies.id, existing));
        if (!row) {
          this.refuse("strategy", s.id, `strategy "${s.name}"`, `imported before as strategy ${existing}, which has since been deleted here`);
          this.report.strategies.push({ ...shown, id: null });
          this.progress("strategy", ++done, list.length);
          continue;
        }
        config = row.config;
        id = existing;
        this.skipped("strategy", s.id, id);
      } else {
        if (plan.driver === "local") {
          if (!(await dirExists(plan.root))) {
            this.refuse(
              "strategy",
              s.id,
              `strategy "${s.name}"`,
              `its files are not at ${plan.root}: give --uploads (or --strategy-root ${s.id}=DIR) the directory that holds them`,
            );
            this.report.strategies.push({ ...shown, id: null });
            this.progress("strategy", ++done, list.length);
            continue;
          }
        }
        // a strategy of ours that is the same storage at the same address (the seeded local one, for Lsky's default
        // local strategy served at BASE_URL/i) takes its images: no twin beside it
        const twin = await findTwinStrategy(this.db, plan.driver, config);
        if (twin !== null) this.note(`Strategy ${s.id} "${s.name}": its images join strategy ${twin} here, the same storage at the same address.`);
        id = await this.create("strategy", s.id, async (tx) => {
          if (twin !== null) return twin;
          return insertKeepingId(tx, "strategies", s.id, async (keep) => {
            const [row] = await tx
              .insert(strategies)
              .values({
                ...(keep ? { id: keep } : {}),
                name: s.name.slice(0, 100) || `Lsky ${s.id}`,
                driver: plan.driver,
                config,
                ...(s.createdAt ? { createdAt: this.time(s.createdAt) } : {}),
              })
              .returning({ id: strategies.id });
            return row!.id;
          });
        });
        this.imported("strategy", s.id, id);
      }
      const storage = this.target.storage.for({ id, driver: plan.driver, config });
      const sameFiles = plan.driver === "s3" || this.options.adopt || (await sameLocation(plan.driver === "local" ? plan.root : "", storage));
      this.storages.set(s.id, { lsky: s, storage, driver: plan.driver, sourceRoot: plan.driver === "local" ? plan.root : undefined, sameFiles });
      this.report.strategies.push({
        ...shown,
        id: id > 0 ? id : null,
        ...(plan.driver === "local" ? { root: plan.root, legacy_url: (config.legacy_url as string | undefined) ?? null } : {}),
      });
      this.progress("strategy", ++done, list.length);
    }
  }

  private async groups() {
    const list = await this.source.groups();
    const links = await this.source.groupStrategies();
    const mapped = await importedIds(
      this.db,
      SOURCE,
      "group",
      list.map((g) => g.id),
    );
    const initial = Number(await this.source.config("user_initial_capacity"));
    const defaultCapacityKb = Number.isFinite(initial) && initial >= 0 ? Math.floor(initial) : null;
    this.progress("group", 0, list.length);
    let done = 0;
    for (const g of list) {
      const existing = mapped.get(g.id);
      if (existing !== undefined) {
        this.skipped("group", g.id, existing);
        this.progress("group", ++done, list.length);
        continue;
      }
      const { values, dropped } = groupValues(g, defaultCapacityKb);
      if (dropped.length > 0) this.note(`Group ${g.id} "${g.name}": not carried over: ${dropped.join("; ")}.`);
      const strategyIds: number[] = [];
      for (const sid of links.get(g.id) ?? []) {
        const ours = this.idOf("strategy", sid);
        if (ours !== undefined) strategyIds.push(ours);
        else this.note(`Group ${g.id} "${g.name}": its strategy ${sid} was not imported (${this.whyNot("strategy", sid)}).`);
      }
      const id = await this.create("group", g.id, async (tx) => {
        // Lsky has one default group and one guest group: the imported ones take those places
        if (values.isDefault) await tx.update(groups).set({ isDefault: false }).where(eq(groups.isDefault, true));
        if (values.isGuest) await tx.update(groups).set({ isGuest: false }).where(eq(groups.isGuest, true));
        const [row] = await tx
          .insert(groups)
          .values({ ...values, ...(g.createdAt ? { createdAt: this.time(g.createdAt) } : {}) })
          .returning({ id: groups.id });
        if (strategyIds.length > 0)
          await tx.insert(groupStrategies).values(strategyIds.map((strategyId, position) => ({ groupId: row!.id, strategyId, position })));
        return row!.id;
      });
      this.imported("group", g.id, id);
      this.progress("group", ++done, list.length);
    }
  }

  /** Our default group (the imported default one, if it was): where accounts without a group in Lsky go. */
  private async defaultGroupId(): Promise<number | undefined> {
    const [row] = await this.db.select({ id: groups.id }).from(groups).where(eq(groups.isDefault, true)).orderBy(groups.id).limit(1);
    return row?.id;
  }

  private async users() {
    const total = await this.source.count("users");
    this.progress("user", 0, total);
    let done = 0;
    let fallbackGroup: number | undefined;
    for (let after = 0; ; ) {
      const batch = await this.source.users(after, BATCH);
      if (batch.length === 0) break;
      after = batch[batch.length - 1]!.id;
      const mapped = await importedIds(
        this.db,
        SOURCE,
        "user",
        batch.map((u) => u.id),
      );
      for (const u of batch) {
        this.progress("user", ++done, total);
        const existing = mapped.get(u.id);
        if (existing !== undefined) {
          this.skipped("user", u.id, existing);
          continue;
        }
        const email = u.email.trim();
        if (!plausibleEmail(email)) {
          this.refuse("user", u.id, `user ${JSON.stringify(u.name)}`, `its email ${JSON.stringify(email)} is not an address`);
          continue;
        }
        if (this.claimed.emails.has(email.toLowerCase()) || (await accountTaken(this.db, { email }))) {
          this.refuse("user", u.id, email, "an account with this email exists here already");
          continue;
        }
        let groupId = this.idOf("group", u.groupId);
        if (groupId === undefined) {
          fallbackGroup ??= await this.defaultGroupId();
          groupId = fallbackGroup;
          if (groupId === undefined) {
            this.refuse("user", u.id, email, "it has no group and there is no default group here");
            continue;
          }
          this.note(
            u.groupId === null
              ? `User ${u.id} (${email}) had no group in Lsky Pro: placed in the default group.`
              : `User ${u.id} (${email}): its group ${u.groupId} was not imported (${this.whyNot("group", u.groupId)}): placed in the default group.`,
          );
        }
        let username: string | undefined;
        for (const candidate of usernameCandidates(u.name, email, u.id)) {
          if (this.claimed.usernames.has(candidate.toLowerCase())) continue;
          if (await accountTaken(this.db, { username: candidate })) continue;
          username = candidate;
          break;
        }
        if (!username) {
          this.refuse("user", u.id, email, "no free username could be made from its name or email");
          continue;
        }
        this.claimed.usernames.add(username.toLowerCase());
        this.claimed.emails.add(email.toLowerCase());
        const passwordHash = isBcrypt(u.password) ? u.password : null;
        if (!passwordHash) this.note(`User ${u.id} (${email}): its password hash is not bcrypt: it signs in once an administrator sets a password.`);
        const values = {
          username,
          name: (u.name || username).slice(0, 200),
          email,
          groupId,
          enabled: u.status === 1,
          capacityKb: Math.max(0, Math.floor(u.capacity)),
          registeredIp: u.registeredIp.slice(0, 64),
          passwordHash,
          role: u.isAdminer ? ("admin" as const) : ("user" as const),
          ...(u.createdAt ? { createdAt: this.time(u.createdAt) } : {}),
        };
        try {
          const id = await this.create("user", u.id, async (tx) => {
            const [row] = await tx.insert(users).values(values).returning({ id: users.id });
            return row!.id;
          });
          this.imported("user", u.id, id);
        } catch (e) {
          if (!isUniqueViolation(e)) throw e;
          this.refuse("user", u.id, email, "its username or email was taken here meanwhile: run the import again");
        }
      }
    }
  }

  private async albums() {
    const total = await this.source.count("albums");
    if (!this.options.dryRun) await reserveIdsUpTo(this.db, "albums", await this.source.maxId("albums"));
    this.progress("album", 0, total);
    let done = 0;
    for (let after = 0; ; ) {
      const batch = await this.source.albums(after, BATCH);
      if (batch.length === 0) break;
      after = batch[batch.length - 1]!.id;
      const mapped = await importedIds(
        this.db,
        SOURCE,
        "album",
        batch.map((a) => a.id),
      );
      for (const a of batch) {
        this.progress("album", ++done, total);
        const existing = mapped.get(a.id);
        if (existing !== undefined) {
          this.skipped("album", a.id, existing);
          continue;
        }
        const owner = this.idOf("user", a.userId);
        if (owner === undefined) {
          this.refuse("album", a.id, `album ${JSON.stringify(a.name)}`, `its owner (user ${a.userId}) was not imported: ${this.whyNot("user", a.userId)}`);
          continue;
        }
        if (a.intro) this.note("Album descriptions (intro) are not carried over: albums here have a name only.");
        const name = (a.name.trim() || `Album ${a.id}`).slice(0, 100);
        const id = await this.create("album", a.id, async (tx) => {
          const [user] = await tx.select({ albumNum: users.albumNum }).from(users).where(eq(users.id, owner)).for("update");
          if ((user?.albumNum ?? 0) >= ALBUMS_PER_ACCOUNT) throw new AlbumLimit();
          const albumId = await insertKeepingId(tx, "albums", a.id, async (keep) => {
            const [row] = await tx
              .insert(albums)
              .values({ ...(keep ? { id: keep } : {}), userId: owner, name, ...(a.createdAt ? { createdAt: this.time(a.createdAt) } : {}) })
              .returning({ id: albums.id });
            return row!.id;
          });
          await tx
            .update(users)
            .set({ albumNum: sql`${users.albumNum} + 1` })
            .where(eq(users.id, owner));
          return albumId;
        }).catch((e) => {
          if (e instanceof AlbumLimit) return 0;
          throw e;
        });
        if (id === 0) {
          this.refuse("album", a.id, `album ${JSON.stringify(a.name)}`, `its owner holds ${ALBUMS_PER_ACCOUNT} albums here, the most an account may`);
          continue;
        }
        this.imported("album", a.id, id);
      }
    }
  }

  private async images() {
    const total = await this.source.count("images");
    this.progress("image", 0, total);
    let done = 0;
    let unhealthy = 0;
    let aliased = 0;
    for (let after = 0; ; ) {
      const batch = await this.source.images(after, BATCH);
      if (batch.length === 0) break;
      after = batch[batch.length - 1]!.id;
      const mapped = await importedIds(
        this.db,
        SOURCE,
        "image",
        batch.map((i) => i.id),
      );
      for (const image of batch) {
        const existing = mapped.get(image.id);
        if (existing !== undefined) this.skipped("image", image.id, existing);
        else {
          if (image.isUnhealthy) unhealthy++;
          if (image.aliasName && image.aliasName !== image.originName) aliased++;
          await this.image(image);
        }
        this.progress("image", ++done, total);
      }
    }
    if (unhealthy > 0)
      this.note(`${unhealthy} images were marked unhealthy by Lsky Pro's content scan: imported as they were; review them in the admin pages.`);
    if (aliased > 0) this.note(`${aliased} images had an alias name in Lsky Pro: their original name is kept, the alias is not.`);
  }

  private async image(image: LskyImage) {
    const what = `image ${image.key}`;
    const strategy = image.strategyId === null ? undefined : this.storages.get(image.strategyId);
    if (!strategy) {
      this.refuse(
        "image",
        image.id,
        what,
        image.strategyId === null
          ? "it has no strategy in Lsky Pro (deleted)"
          : `its strategy ${image.strategyId} was not imported: ${this.whyNot("strategy", image.strategyId)}`,
      );
      return;
    }
    const strategyId = this.idOf("strategy", image.strategyId)!;
    let userId: number | null = null;
    if (image.userId !== null) {
      const owner = this.idOf("user", image.userId);
      if (owner === undefined) {
        this.refuse("image", image.id, what, `its owner (user ${image.userId}) was not imported: ${this.whyNot("user", image.userId)}`);
        return;
      }
      userId = owner;
    }
    const albumId = this.idOf("album", image.albumId) ?? null;
    if (image.albumId !== null && albumId === null)
      this.note(`Album ${image.albumId} was not imported (${this.whyNot("album", image.albumId)}): its images are kept outside any album.`);
    const extension = image.extension || image.name.split(".").pop()!.toLowerCase();
    const mimetype = canonicalMime(extension);
    if (!mimetype) {
      this.refuse("image", image.id, what, `.${extension} files are not served here (JPEG, PNG, GIF, WebP, AVIF and TIFF are)`);
      return;
    }
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(image.key)) {
      this.refuse("image", image.id, what, "its key is not one clients can name here");
      return;
    }
    if (this.claimed.keys.has(image.key) || (await imageKeyTaken(this.db, image.key))) {
      this.refuse("image", image.id, what, "an image with this key exists here already");
      return;
    }
    const pathname = lskyPathname(image.path, image.name);
    // the bytes, from Lsky's root or the bucket, checked against what Lsky recorded
    let bytes: Uint8Array;
    try {
      bytes = strategy.driver === "local" ? await readUnder(strategy.sourceRoot!, pathname) : await strategy.storage.read(pathname);
    } catch (e) {
      const missing = (e instanceof StorageError && e.missing) || (e as NodeJS.ErrnoException).code === "ENOENT";
      this.refuse("image", image.id, what, missing ? `its file ${pathname} is missing` : `its file ${pathname} cannot be read: ${(e as Error).message}`);
      return;
    }
    const md5 = new Bun.CryptoHasher("md5").update(bytes).digest("hex");
    if (md5 !== image.md5) {
      this.refuse("image", image.id, what, `its file ${pathname} differs from what Lsky Pro recorded (md5 ${md5}, recorded ${image.md5})`);
      return;
    }
    const sha1 = new Bun.CryptoHasher("sha1").update(bytes).digest("hex");
    if (image.sha1 && sha1 !== image.sha1) {
      this.refuse("image", image.id, what, `its file ${pathname} differs from what Lsky Pro recorded (sha1 ${sha1}, recorded ${image.sha1})`);
      return;
    }
    let inspection: Awaited<ReturnType<typeof inspectImage>>;
    try {
      inspection = await inspectImage(bytes);
    } catch (e) {
      this.refuse("image", image.id, what, `its file cannot be read as an image: ${(e as Error).message}`);
      return;
    }
    if (!inspection || !contentMatches(extension, inspection.sniffedMime)) {
      this.refuse("image", image.id, what, `its file is not a .${extension} image (${inspection?.sniffedMime ?? "unrecognised content"})`);
      return;
    }
    const width = inspection.width;
    const height = inspection.height;
    if ((image.width && image.width !== width) || (image.height && image.height !== height)) {
      this.note(`Image ${image.key}: Lsky Pro recorded ${image.width}×${image.height}, the file is ${width}×${height}: the file's are kept.`);
    }
    // its path: Lsky's when this server can serve it there and nothing here holds it, else one of our own
    const createdAt = this.time(image.createdAt);
    const baseName = pathname.slice(pathname.lastIndexOf("/") + 1);
    let reason: string | null = null;
    if (!servablePath(pathname)) reason = "its path holds characters this server does not serve";
    else if (this.claimed.paths.has(pathname) || this.claimed.names.has(baseName) || (await storedPathTaken(this.db, pathname, baseName)))
      reason = "another image here holds its path or name (Lsky Pro stores identical files once)";
    const keepPath = reason === null;
    let path = pathname;
    let name = baseName;
    if (!keepPath) {
      const d = createdAt ?? this.target.clock();
      const date = `${d.getUTCFullYear()}/${String(d.getUTCMonth() + 1).padStart(2, "0")}/${String(d.getUTCDate()).padStart(2, "0")}`;
      name = `${randomToken(15)}.${extension}`;
      path = `${date}/${name}`;
    }
    this.claimed.paths.add(path);
    this.claimed.names.add(name);
    this.claimed.keys.add(image.key);
    // the file in place first: the record that names it commits after (a crash between leaves an unnamed copy only)
    const needsWrite = !keepPath || !strategy.sameFiles;
    if (needsWrite && !this.options.dryRun) {
      try {
        await strategy.storage.put(path, bytes, mimetype);
      } catch (e) {
        this.refuse("image", image.id, what, `its file could not be stored here: ${(e as Error).message}`);
        return;
      }
    }
    const row = {
      key: image.key,
      userId,
      albumId,
      strategyId,
      path,
      thumbnailPath: null,
      name,
      originName: (image.originName || image.name).slice(0, 255),
      size: bytes.length,
      mimetype,
      extension,
      width,
      height,
      md5,
      sha1,
      isPublic: image.permission === 1,
      expiredAt: null,
      uploaderIp: image.uploadedIp.slice(0, 64),
      ...(createdAt ? { createdAt } : {}),
    };
    let id: number;
    try {
      id = await this.create("image", image.id, (tx) => insertImportedImage(tx, row));
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      if (needsWrite && path !== pathname) await strategy.storage.delete(path).catch(() => {});
      this.refuse("image", image.id, what, "its key, path or name was taken here meanwhile: run the import again");
      return;
    }
    this.imported("image", image.id, id);
    if (!keepPath) {
      const lskyUrl = lskyUrlOf(strategy.lsky);
      this.report.moved.push({
        lsky_id: image.id,
        key: image.key,
        old_url: lskyUrl ? `${lskyUrl}/${pathname}` : pathname,
        new_url: strategy.storage.url(path),
        reason: reason!,
      });
    }
  }

  private async tokens() {
    const total = await this.source.count("personal_access_tokens");
    if (!this.options.dryRun) await reserveIdsUpTo(this.db, "tokens", await this.source.maxId("personal_access_tokens"));
    this.progress("token", 0, total);
    let done = 0;
    const now = this.target.clock();
    for (let after = 0; ; ) {
      const batch = await this.source.tokens(after, BATCH);
      if (batch.length === 0) break;
      after = batch[batch.length - 1]!.id;
      const mapped = await importedIds(
        this.db,
        SOURCE,
        "token",
        batch.map((t) => t.id),
      );
      for (const t of batch) {
        this.progress("token", ++done, total);
        const what = `token ${t.id} (${t.name})`;
        const existing = mapped.get(t.id);
        if (existing !== undefined) {
          this.skipped("token", t.id, existing);
          continue;
        }
        if (!/(^|\\)User$/.test(t.tokenableType)) {
          this.refuse("token", t.id, what, `it belongs to a ${t.tokenableType}, not to a user`);
          continue;
        }
        const owner = this.idOf("user", t.tokenableId);
        if (owner === undefined) {
          this.refuse("token", t.id, what, `its owner (user ${t.tokenableId}) was not imported: ${this.whyNot("user", t.tokenableId)}`);
          continue;
        }
        if (!/^[0-9a-f]{64}$/.test(t.token)) {
          this.refuse("token", t.id, what, "its stored hash is not a SHA-256");
          continue;
        }
        const abilities = parseAbilities(t.abilities);
        if (!abilities.includes("*")) {
          this.refuse("token", t.id, what, `it may do ${abilities.length ? abilities.join(", ") : "nothing"} only: a token here may use the whole API`);
          continue;
        }
        const expiredAt = this.time(t.expiresAt) ?? null;
        if (expiredAt && expiredAt.getTime() <= now.getTime()) {
          this.refuse("token", t.id, what, `it expired on ${expiredAt.toISOString()}`);
          continue;
        }
        if (owner > 0 && (await tokenHashTaken(this.db, t.token))) {
          this.refuse("token", t.id, what, "a token with this secret exists here already");
          continue;
        }
        if (owner > 0 && (await livePermanentTokens(this.db, owner, now)) >= TOKEN_LIMITS.livePermanent) {
          this.refuse("token", t.id, what, `its owner holds ${TOKEN_LIMITS.livePermanent} tokens here, the most an account may`);
          continue;
        }
        const id = await this.create("token", t.id, (tx) =>
          insertKeepingId(tx, "tokens", t.id, async (keep) => {
            const [row] = await tx
              .insert(tokens)
              .values({
                ...(keep ? { id: keep } : {}),
                userId: owner,
                kind: "permanent",
                secretHash: t.token,
                expiredAt,
                label: (t.name || "Lsky Pro").slice(0, 100),
                lastUsedAt: this.time(t.lastUsedAt) ?? null,
                ...(t.createdAt ? { createdAt: this.time(t.createdAt) } : {}),
              })
              .returning({ id: tokens.id });
            return row!.id;
          }),
        );
        this.imported("token", t.id, id);
      }
    }
  }
}

class AlbumLimit extends Error {}

/** Sanctum's abilities column: a JSON array (`["*"]` for Lsky's tokens); anything unreadable grants nothing. */
function parseAbilities(text: string | null): string[] {
  if (text === null) return [];
  try {
    const parsed = JSON.parse(text);
    return Array.isArray(parsed) ? parsed.map(String) : [];
  } catch {
    return [];
  }
}

const isUniqueViolation = (e: unknown) => {
  const err = e as { code?: string; cause?: { code?: string } };
  return err.code === "23505" || err.cause?.code === "23505";
};

async function dirExists(path: string): Promise<boolean> {
  return stat(path)
    .then((s) => s.isDirectory())
    .catch(() => false);
}

/** A file under a root, refusing paths that would leave it (`..`, absolute names, links out of it). */
async function readUnder(root: string, pathname: string): Promise<Uint8Array> {
  const base = realpathSync(root);
  const full = resolve(base, pathname);
  if (!full.startsWith(base + sep)) throw Object.assign(new Error("its path leaves the uploads root"), { code: "EPATH" });
  const real = realpathSync(full);
  if (!real.startsWith(base + sep)) throw Object.assign(new Error("its file is a link out of the uploads root"), { code: "EPATH" });
  return Bun.file(real).bytes();
}

/** Whether Lsky's root and the storage we write to are one directory (copying would write each file onto itself). */
async function sameLocation(sourceRoot: string, storage: Storage): Promise<boolean> {
  if (!sourceRoot) return false;
  try {
    const target = (storage as { root?: string }).root;
    return target !== undefined && realpathSync(sourceRoot) === realpathSync(target);
  } catch {
    return false;
  }
}

export async function runImport(source: LskySource, target: ImportTarget, options: ImportOptions): Promise<ImportReport> {
  return new Run(source, target, options).run();
}
