/**
 * Reading a Lsky Pro 2.x database (MySQL/MariaDB, PostgreSQL or SQLite) through Bun's built-in SQL client. Only
 * SELECTs are sent, and an SQLite file is opened read-only: the source is never written. Every value is normalised
 * here (decimals that MySQL and PostgreSQL return as strings, booleans as 0/1, JSON columns as text or objects,
 * timestamps as naive wall-clock text in the Lsky site's time zone), so the importer sees one shape whatever the
 * dialect.
 */
import { SQL } from "bun";

export type Dialect = "mysql" | "postgres" | "sqlite";

/** Rows as the importer reads them (the columns of Lsky Pro 2.x's migrations it uses). */
export interface LskyGroup {
  id: number;
  name: string;
  isDefault: boolean;
  isGuest: boolean;
  configs: Record<string, unknown>;
  createdAt: string | null;
}

export interface LskyStrategy {
  id: number;
  /** 1 local, 2 S3, 3 OSS, 4 COS, 5 Kodo, 6 USS, 7 SFTP, 8 FTP, 9 WebDav, 10 Minio (app/Enums/StrategyKey.php). */
  key: number;
  name: string;
  configs: Record<string, unknown>;
  createdAt: string | null;
}

export interface LskyUser {
  id: number;
  groupId: number | null;
  name: string;
  email: string;
  password: string;
  isAdminer: boolean;
  /** KB */
  capacity: number;
  registeredIp: string;
  /** 1 normal, 0 frozen */
  status: number;
  createdAt: string | null;
}

export interface LskyAlbum {
  id: number;
  userId: number;
  name: string;
  intro: string;
  createdAt: string | null;
}

export interface LskyImage {
  id: number;
  userId: number | null;
  albumId: number | null;
  groupId: number | null;
  strategyId: number | null;
  key: string;
  path: string;
  name: string;
  originName: string;
  aliasName: string;
  /** KB, two decimals */
  size: number;
  mimetype: string;
  extension: string;
  md5: string;
  sha1: string;
  width: number;
  height: number;
  /** 1 public, 0 private */
  permission: number;
  isUnhealthy: boolean;
  uploadedIp: string;
  createdAt: string | null;
}

export interface LskyToken {
  id: number;
  tokenableType: string;
  tokenableId: number;
  name: string;
  /** sha256 hex of the plain-text part of `ID|PLAINTEXT` */
  token: string;
  abilities: string | null;
  lastUsedAt: string | null;
  /** Sanctum 3 and later only; Lsky Pro 2.x ships Sanctum 2, whose tokens never expire. */
  expiresAt: string | null;
  createdAt: string | null;
}

export class SourceError extends Error {
  constructor(
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

/** The tables of a Lsky Pro 2.x database the importer reads. */
const REQUIRED_TABLES = ["groups", "strategies", "group_strategy", "users", "albums", "images", "personal_access_tokens", "configs"] as const;

/** `mysql://…`, `postgres://…` or `sqlite:///path` → the dialect and what to hand Bun's SQL client. */
export function parseSourceUrl(url: string): { dialect: Dialect; shown: string } {
  const scheme = url.slice(0, Math.max(0, url.indexOf(":"))).toLowerCase();
  if (scheme === "mysql" || scheme === "mariadb" || scheme === "mysql2") return { dialect: "mysql", shown: hidePassword(url) };
  if (scheme === "postgres" || scheme === "postgresql") return { dialect: "postgres", shown: hidePassword(url) };
  if (scheme === "sqlite" || scheme === "file") return { dialect: "sqlite", shown: url };
  throw new SourceError(`--database: ${JSON.stringify(hidePassword(url))} is not a mysql://, postgres:// or sqlite:/// address`, [
    "mysql://user:password@host:3306/lsky, postgres://user:password@host:5432/lsky or sqlite:///var/www/lsky/database/database.sqlite",
  ]);
}

function hidePassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ":***@");
  }
}

/** The SQLite file a `sqlite:///abs/path` (or `sqlite://rel/path`, `file:…`) address names. */
function sqliteFile(url: string): string {
  const rest = url.replace(/^(sqlite|file):/i, "");
  if (rest.startsWith("///")) return rest.slice(2);
  if (rest.startsWith("//")) return rest.slice(2);
  return rest;
}

const asNumber = (v: unknown): number => (v === null || v === undefined || v === "" ? 0 : Number(v));
const asNullableNumber = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const asBool = (v: unknown): boolean => v === true || v === "t" || v === "true" || (typeof v !== "boolean" && Number(v) === 1);
const asText = (v: unknown): string => (v === null || v === undefined ? "" : String(v));
const asNullableText = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

function asJson(v: unknown): Record<string, unknown> {
  if (v === null || v === undefined || v === "") return {};
  if (typeof v === "object" && !(v instanceof Uint8Array)) return v as Record<string, unknown>;
  try {
    const parsed = JSON.parse(typeof v === "string" ? v : new TextDecoder().decode(v as Uint8Array));
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** A Lsky Pro database, open for reading. */
export class LskySource {
  private columnsCache = new Map<string, Set<string>>();

  private constructor(
    readonly dialect: Dialect,
    readonly shown: string,
    private readonly sql: SQL,
  ) {}

  static async open(url: string): Promise<LskySource> {
    const { dialect, shown } = parseSourceUrl(url);
    let sql: SQL;
    try {
      if (dialect === "sqlite") {
        const filename = sqliteFile(url);
        if (!filename || !(await Bun.file(filename).exists())) throw new SourceError(`--database: no SQLite file at ${JSON.stringify(filename)}`);
        sql = new SQL({ adapter: "sqlite", filename, readonly: true });
      } else {
        sql = new SQL(url, { max: 2 });
      }
    } catch (e) {
      if (e instanceof SourceError) throw e;
      throw new SourceError(`--database: cannot open ${shown}: ${(e as Error).message}`);
    }
    const source = new LskySource(dialect, shown, sql);
    try {
      await source.checkTables();
    } catch (e) {
      await source.close();
      throw e;
    }
    return source;
  }

  async close() {
    await this.sql.close().catch(() => {});
  }

  /** An identifier quoted for the dialect (`key` is a reserved word in MySQL). */
  private q(name: string) {
    return this.dialect === "mysql" ? `\`${name}\`` : `"${name}"`;
  }

  /** The n-th (1-based) parameter's placeholder. */
  private p(n: number) {
    return this.dialect === "postgres" ? `$${n}` : "?";
  }

  /** A timestamp column as naive `YYYY-MM-DD HH:MM:SS` text (Laravel writes the site's wall-clock time). */
  private ts(column: string) {
    const c = this.q(column);
    if (this.dialect === "mysql") return `CAST(${c} AS CHAR) AS ${c}`;
    if (this.dialect === "postgres") return `to_char(${c}, 'YYYY-MM-DD HH24:MI:SS') AS ${c}`;
    return c;
  }

  private async rows(text: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
    try {
      return [...((await this.sql.unsafe(text, params as never[])) as Record<string, unknown>[])];
    } catch (e) {
      throw new SourceError(`reading the Lsky Pro database failed: ${(e as Error).message}`, [text.slice(0, 200)]);
    }
  }

  private async tables(): Promise<Set<string>> {
    const text =
      this.dialect === "sqlite"
        ? "SELECT name FROM sqlite_master WHERE type = 'table'"
        : this.dialect === "mysql"
          ? "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = DATABASE()"
          : "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()";
    return new Set((await this.rows(text)).map((r) => String(r.name ?? r.NAME ?? r.TABLE_NAME)));
  }

  private async columns(table: string): Promise<Set<string>> {
    let found = this.columnsCache.get(table);
    if (found) return found;
    const text =
      this.dialect === "sqlite"
        ? `SELECT name FROM pragma_table_info('${table}')`
        : this.dialect === "mysql"
          ? `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = '${table}'`
          : `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '${table}'`;
    found = new Set((await this.rows(text)).map((r) => String(r.name ?? r.NAME ?? r.COLUMN_NAME)));
    this.columnsCache.set(table, found);
    return found;
  }

  private async checkTables() {
    let present: Set<string>;
    try {
      present = await this.tables();
    } catch (e) {
      throw new SourceError(`--database: cannot read ${this.shown}: ${(e as Error).message}`);
    }
    const missing = REQUIRED_TABLES.filter((t) => !present.has(t));
    if (missing.length > 0) {
      throw new SourceError(`--database: ${this.shown} is not a Lsky Pro 2.x database (no table ${missing.join(", ")})`, [
        "Name the database Lsky Pro's .env names (DB_CONNECTION, DB_DATABASE). A table prefix (DB_PREFIX) is not supported.",
      ]);
    }
    const imageColumns = await this.columns("images");
    for (const c of ["key", "path", "name", "md5", "sha1", "permission", "strategy_id"]) {
      if (!imageColumns.has(c)) throw new SourceError(`--database: ${this.shown}: images has no column ${c}: not a Lsky Pro 2.x database`);
    }
  }

  /** The site's configuration value (the `configs` table: name → value), or null. */
  async config(name: string): Promise<string | null> {
    const [row] = await this.rows(`SELECT value FROM configs WHERE name = ${this.p(1)}`, [name]);
    return row ? asNullableText(row.value) : null;
  }

  async count(table: "groups" | "strategies" | "users" | "albums" | "images" | "personal_access_tokens"): Promise<number> {
    const [row] = await this.rows(`SELECT COUNT(*) AS n FROM ${this.q(table)}`);
    return asNumber(row?.n);
  }

  async maxId(table: "strategies" | "albums" | "personal_access_tokens"): Promise<number> {
    const [row] = await this.rows(`SELECT MAX(id) AS n FROM ${this.q(table)}`);
    return asNumber(row?.n);
  }

  async groups(): Promise<LskyGroup[]> {
    const rows = await this.rows(`SELECT id, name, is_default, is_guest, configs, ${this.ts("created_at")} FROM ${this.q("groups")} ORDER BY id`);
    return rows.map((r) => ({
      id: asNumber(r.id),
      name: asText(r.name),
      isDefault: asBool(r.is_default),
      isGuest: asBool(r.is_guest),
      configs: asJson(r.configs),
      createdAt: asNullableText(r.created_at),
    }));
  }

  async strategies(): Promise<LskyStrategy[]> {
    const rows = await this.rows(`SELECT id, ${this.q("key")}, name, configs, ${this.ts("created_at")} FROM strategies ORDER BY id`);
    return rows.map((r) => ({
      id: asNumber(r.id),
      key: asNumber(r.key),
      name: asText(r.name),
      configs: asJson(r.configs),
      createdAt: asNullableText(r.created_at),
    }));
  }

  /** group id → its strategy ids, in the order Lsky lists them. */
  async groupStrategies(): Promise<Map<number, number[]>> {
    // unordered, as Lsky reads it ($group->strategies()->get(), whose first is the upload's default): the pivot's order
    const rows = await this.rows("SELECT group_id, strategy_id FROM group_strategy");
    const map = new Map<number, number[]>();
    for (const r of rows) {
      const g = asNumber(r.group_id);
      const list = map.get(g) ?? [];
      if (!list.includes(asNumber(r.strategy_id))) list.push(asNumber(r.strategy_id));
      map.set(g, list);
    }
    return map;
  }

  async users(afterId: number, limit: number): Promise<LskyUser[]> {
    const rows = await this.rows(
      `SELECT id, group_id, name, email, password, is_adminer, capacity, registered_ip, status, ${this.ts("created_at")} ` +
        `FROM users WHERE id > ${this.p(1)} ORDER BY id LIMIT ${Math.trunc(limit)}`,
      [afterId],
    );
    return rows.map((r) => ({
      id: asNumber(r.id),
      groupId: asNullableNumber(r.group_id),
      name: asText(r.name),
      email: asText(r.email),
      password: asText(r.password),
      isAdminer: asBool(r.is_adminer),
      capacity: asNumber(r.capacity),
      registeredIp: asText(r.registered_ip),
      status: asNumber(r.status),
      createdAt: asNullableText(r.created_at),
    }));
  }

  async albums(afterId: number, limit: number): Promise<LskyAlbum[]> {
    const rows = await this.rows(
      `SELECT id, user_id, name, intro, ${this.ts("created_at")} FROM albums WHERE id > ${this.p(1)} ORDER BY id LIMIT ${Math.trunc(limit)}`,
      [afterId],
    );
    return rows.map((r) => ({
      id: asNumber(r.id),
      userId: asNumber(r.user_id),
      name: asText(r.name),
      intro: asText(r.intro),
      createdAt: asNullableText(r.created_at),
    }));
  }

  async images(afterId: number, limit: number): Promise<LskyImage[]> {
    const rows = await this.rows(
      `SELECT id, user_id, album_id, group_id, strategy_id, ${this.q("key")}, path, name, origin_name, alias_name, size, mimetype, extension, ` +
        `md5, sha1, width, height, permission, is_unhealthy, uploaded_ip, ${this.ts("created_at")} ` +
        `FROM images WHERE id > ${this.p(1)} ORDER BY id LIMIT ${Math.trunc(limit)}`,
      [afterId],
    );
    return rows.map((r) => ({
      id: asNumber(r.id),
      userId: asNullableNumber(r.user_id),
      albumId: asNullableNumber(r.album_id),
      groupId: asNullableNumber(r.group_id),
      strategyId: asNullableNumber(r.strategy_id),
      key: asText(r.key),
      path: asText(r.path),
      name: asText(r.name),
      originName: asText(r.origin_name),
      aliasName: asText(r.alias_name),
      size: asNumber(r.size),
      mimetype: asText(r.mimetype),
      extension: asText(r.extension).toLowerCase(),
      md5: asText(r.md5).toLowerCase(),
      sha1: asText(r.sha1).toLowerCase(),
      width: asNumber(r.width),
      height: asNumber(r.height),
      permission: asNumber(r.permission),
      isUnhealthy: asBool(r.is_unhealthy),
      uploadedIp: asText(r.uploaded_ip),
      createdAt: asNullableText(r.created_at),
    }));
  }

  async tokens(afterId: number, limit: number): Promise<LskyToken[]> {
    const hasExpiry = (await this.columns("personal_access_tokens")).has("expires_at");
    const rows = await this.rows(
      `SELECT id, tokenable_type, tokenable_id, name, token, abilities, ${this.ts("last_used_at")}, ${hasExpiry ? `${this.ts("expires_at")}, ` : ""}` +
        `${this.ts("created_at")} FROM personal_access_tokens WHERE id > ${this.p(1)} ORDER BY id LIMIT ${Math.trunc(limit)}`,
      [afterId],
    );
    return rows.map((r) => ({
      id: asNumber(r.id),
      tokenableType: asText(r.tokenable_type),
      tokenableId: asNumber(r.tokenable_id),
      name: asText(r.name),
      token: asText(r.token).toLowerCase(),
      abilities: asNullableText(r.abilities),
      lastUsedAt: asNullableText(r.last_used_at),
      expiresAt: hasExpiry ? asNullableText(r.expires_at) : null,
      createdAt: asNullableText(r.created_at),
    }));
  }
}

/**
 * A naive `YYYY-MM-DD HH:MM:SS` of the given IANA time zone as an instant; null for null or unreadable text (and
 * MySQL's zero date).
 */
export function wallClockToDate(text: string | null, timeZone: string): Date | null {
  if (!text) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/.exec(text);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  if (y === 0) return null;
  const asUtc = Date.UTC(y, mo - 1, d, h, mi, s);
  // the zone's offset at the guess, then again at the result (a day of a daylight-saving change)
  let at = asUtc - offsetOf(timeZone, asUtc);
  at = asUtc - offsetOf(timeZone, at);
  return new Date(at);
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** Milliseconds the zone's wall clock is ahead of UTC at `instant`. */
function offsetOf(timeZone: string, instant: number): number {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    formatters.set(timeZone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(new Date(instant)).map((p) => [p.type, p.value]));
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return wall - Math.floor(instant / 1000) * 1000;
}

/** Whether the zone is one Intl knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}
