/**
 * A Lsky Pro 2.x site to import, built the way Lsky builds and fills it: the schema of its own migrations
 * (lsky-org/lsky-pro, database/migrations/, as of 2.1 and its master branch, whose migrations 2.1 left unchanged),
 * rendered for MySQL/MariaDB and for SQLite as Laravel's schema grammars render them; rows as its models and
 * services write them (app/Models, app/Services/ImageService.php, InstallSeeder, config/convention.php): group and
 * strategy `configs` as JSON, bcrypt passwords written `$2y$` as PHP's password_hash does, Sanctum 2 token rows holding
 * the SHA-256 of the plain-text part of `ID|PLAINTEXT`, image sizes in KB with two decimals, `path` + `name` (the
 * pathname) under the strategy's root, identical files stored once and shared by their records, timestamps as the
 * site's wall-clock time (config/app.php: PRC).
 */
import type { SQL } from "bun";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { makeImage } from "./images.ts";

export type LskyDialect = "mysql" | "sqlite";

/** Laravel's column types, as `Blueprint` declares them in Lsky's migrations. */
type Column =
  | { name: string; type: "id" }
  | { name: string; type: "foreignId"; nullable?: boolean; references: string; onDelete: "cascade" | "set null" }
  | { name: string; type: "string"; length?: number; nullable?: boolean; default?: string; unique?: boolean }
  | { name: string; type: "boolean"; default: boolean }
  | { name: string; type: "json" | "text" | "longText"; nullable?: boolean }
  | { name: string; type: "decimal"; total: number; places: number; default: string }
  | { name: string; type: "unsignedBigInteger" | "unsignedInteger" | "unsignedTinyInteger" | "tinyInteger" | "integer"; default?: number }
  | { name: string; type: "timestamp"; nullable: true; useCurrent?: boolean };

const timestamps: Column[] = [
  { name: "created_at", type: "timestamp", nullable: true },
  { name: "updated_at", type: "timestamp", nullable: true },
];

/** Lsky Pro's tables, in migration order (database/migrations/*.php, `up()`), with Laravel's own `migrations`. */
const TABLES: { name: string; columns: Column[]; indexes?: string[][] }[] = [
  {
    name: "migrations",
    columns: [
      { name: "id", type: "id" },
      { name: "migration", type: "string" },
      { name: "batch", type: "integer" },
    ],
  },
  {
    name: "groups",
    columns: [
      { name: "id", type: "id" },
      { name: "name", type: "string", length: 64 },
      { name: "is_default", type: "boolean", default: false },
      { name: "is_guest", type: "boolean", default: false },
      { name: "configs", type: "json" },
      ...timestamps,
    ],
  },
  {
    name: "users",
    columns: [
      { name: "id", type: "id" },
      { name: "group_id", type: "foreignId", nullable: true, references: "groups", onDelete: "set null" },
      { name: "name", type: "string" },
      { name: "email", type: "string", unique: true },
      { name: "password", type: "string" },
      { name: "remember_token", type: "string", length: 100, nullable: true },
      { name: "is_adminer", type: "boolean", default: false },
      { name: "capacity", type: "decimal", total: 20, places: 2, default: "0" },
      { name: "url", type: "string", default: "" },
      { name: "configs", type: "json" },
      { name: "image_num", type: "unsignedBigInteger", default: 0 },
      { name: "album_num", type: "unsignedBigInteger", default: 0 },
      { name: "registered_ip", type: "string", default: "" },
      { name: "status", type: "unsignedTinyInteger", default: 1 },
      { name: "email_verified_at", type: "timestamp", nullable: true },
      ...timestamps,
    ],
  },
  {
    name: "password_resets",
    columns: [
      { name: "email", type: "string" },
      { name: "token", type: "string" },
      { name: "created_at", type: "timestamp", nullable: true },
    ],
    indexes: [["email"]],
  },
  {
    name: "failed_jobs",
    columns: [
      { name: "id", type: "id" },
      { name: "uuid", type: "string", unique: true },
      { name: "connection", type: "text" },
      { name: "queue", type: "text" },
      { name: "payload", type: "longText" },
      { name: "exception", type: "longText" },
      { name: "failed_at", type: "timestamp", nullable: true, useCurrent: true },
    ],
  },
  {
    name: "personal_access_tokens",
    columns: [
      { name: "id", type: "id" },
      // morphs('tokenable'): a type string and an unsigned big integer, indexed together
      { name: "tokenable_type", type: "string" },
      { name: "tokenable_id", type: "unsignedBigInteger" },
      { name: "name", type: "string" },
      { name: "token", type: "string", length: 64, unique: true },
      { name: "abilities", type: "text", nullable: true },
      { name: "last_used_at", type: "timestamp", nullable: true },
      ...timestamps,
    ],
    indexes: [["tokenable_type", "tokenable_id"]],
  },
  {
    name: "strategies",
    columns: [
      { name: "id", type: "id" },
      { name: "key", type: "unsignedTinyInteger" },
      { name: "name", type: "string", length: 64 },
      { name: "intro", type: "string", default: "" },
      { name: "configs", type: "json" },
      ...timestamps,
    ],
  },
  {
    name: "albums",
    columns: [
      { name: "id", type: "id" },
      { name: "user_id", type: "foreignId", references: "users", onDelete: "cascade" },
      { name: "name", type: "string", length: 64 },
      { name: "intro", type: "string", default: "" },
      { name: "image_num", type: "unsignedBigInteger", default: 0 },
      ...timestamps,
    ],
  },
  {
    name: "images",
    columns: [
      { name: "id", type: "id" },
      { name: "user_id", type: "foreignId", nullable: true, references: "users", onDelete: "set null" },
      { name: "album_id", type: "foreignId", nullable: true, references: "albums", onDelete: "set null" },
      { name: "group_id", type: "foreignId", nullable: true, references: "groups", onDelete: "set null" },
      { name: "strategy_id", type: "foreignId", nullable: true, references: "strategies", onDelete: "set null" },
      { name: "key", type: "string", unique: true },
      { name: "path", type: "string" },
      { name: "name", type: "string" },
      { name: "origin_name", type: "string", default: "" },
      { name: "alias_name", type: "string", default: "" },
      // $table->decimal('size'): Laravel's default precision, (8, 2)
      { name: "size", type: "decimal", total: 8, places: 2, default: "0" },
      { name: "mimetype", type: "string", length: 32 },
      { name: "extension", type: "string", length: 32 },
      { name: "md5", type: "string", length: 32 },
      { name: "sha1", type: "string" },
      { name: "width", type: "unsignedInteger", default: 0 },
      { name: "height", type: "unsignedInteger", default: 0 },
      { name: "permission", type: "tinyInteger", default: 0 },
      { name: "is_unhealthy", type: "boolean", default: false },
      { name: "uploaded_ip", type: "string", default: "" },
      ...timestamps,
    ],
  },
  {
    name: "configs",
    columns: [{ name: "name", type: "string", length: 32, unique: true }, { name: "value", type: "longText", nullable: true }, ...timestamps],
  },
  {
    name: "group_strategy",
    columns: [
      { name: "group_id", type: "foreignId", references: "groups", onDelete: "cascade" },
      { name: "strategy_id", type: "foreignId", references: "strategies", onDelete: "cascade" },
    ],
  },
];

/** `CREATE TABLE` statements as Laravel 9's MySqlGrammar and SQLiteGrammar write them. */
export function lskySchema(dialect: LskyDialect): string[] {
  const q = (n: string) => (dialect === "mysql" ? `\`${n}\`` : `"${n}"`);
  const statements: string[] = [];
  for (const table of TABLES) {
    const defs: string[] = [];
    const keys: string[] = [];
    const after: string[] = [];
    for (const c of table.columns) {
      const nullable = "nullable" in c && c.nullable;
      const nul = nullable ? " null" : " not null";
      let def: string;
      if (dialect === "mysql") {
        switch (c.type) {
          case "id":
            def = "bigint unsigned not null auto_increment primary key";
            break;
          case "foreignId":
            def = `bigint unsigned${nul}`;
            break;
          case "string":
            def = `varchar(${c.length ?? 255})${nul}${c.default !== undefined ? ` default '${c.default}'` : ""}`;
            break;
          case "boolean":
            def = `tinyint(1) not null default '${c.default ? 1 : 0}'`;
            break;
          case "json":
            def = `json${nul}`;
            break;
          case "text":
            def = `text${nul}`;
            break;
          case "longText":
            def = `longtext${nul}`;
            break;
          case "decimal":
            def = `decimal(${c.total}, ${c.places}) not null default '${c.default}'`;
            break;
          case "unsignedBigInteger":
            def = `bigint unsigned not null${c.default !== undefined ? ` default '${c.default}'` : ""}`;
            break;
          case "unsignedInteger":
            def = `int unsigned not null${c.default !== undefined ? ` default '${c.default}'` : ""}`;
            break;
          case "unsignedTinyInteger":
            def = `tinyint unsigned not null${c.default !== undefined ? ` default '${c.default}'` : ""}`;
            break;
          case "tinyInteger":
            def = `tinyint not null${c.default !== undefined ? ` default '${c.default}'` : ""}`;
            break;
          case "integer":
            def = `int not null${c.default !== undefined ? ` default '${c.default}'` : ""}`;
            break;
          case "timestamp":
            def = `timestamp null${c.useCurrent ? " default CURRENT_TIMESTAMP" : ""}`;
            break;
        }
      } else {
        switch (c.type) {
          case "id":
            def = "integer primary key autoincrement not null";
            break;
          case "foreignId":
            def = `integer${nul}`;
            break;
          case "string":
            def = `varchar${nul}${c.default !== undefined ? ` default '${c.default}'` : ""}`;
            break;
          case "boolean":
            def = `tinyint(1) not null default '${c.default ? 1 : 0}'`;
            break;
          case "json":
          case "text":
          case "longText":
            def = `text${nul}`;
            break;
          case "decimal":
            def = `numeric not null default '${c.default}'`;
            break;
          case "timestamp":
            def = `datetime null${c.useCurrent ? " default CURRENT_TIMESTAMP" : ""}`;
            break;
          default:
            def = `integer not null${c.default !== undefined ? ` default '${c.default}'` : ""}`;
        }
      }
      defs.push(`${q(c.name)} ${def}`);
      if (c.type === "foreignId") {
        keys.push(`foreign key(${q(c.name)}) references ${q(c.references)}(${q("id")}) on delete ${c.onDelete}`);
      }
      if (c.type === "string" && c.unique) after.push(`create unique index ${q(`${table.name}_${c.name}_unique`)} on ${q(table.name)} (${q(c.name)})`);
    }
    for (const cols of table.indexes ?? []) {
      after.push(`create index ${q(`${table.name}_${cols.join("_")}_index`)} on ${q(table.name)} (${cols.map(q).join(", ")})`);
    }
    const options = dialect === "mysql" ? " default character set utf8mb4 collate 'utf8mb4_unicode_ci' engine = InnoDB" : "";
    // MySQL: Laravel adds foreign keys by ALTER TABLE; inline here, same constraint
    statements.push(`create table ${q(table.name)} (${[...defs, ...keys].join(", ")})${options}`, ...after);
  }
  return statements;
}

/** Lsky's migrations, as its `migrations` table lists them after `php artisan migrate`. */
const MIGRATIONS = [
  "2014_10_10_000000_create_groups_table",
  "2014_10_12_000000_create_users_table",
  "2014_10_12_100000_create_password_resets_table",
  "2019_08_19_000000_create_failed_jobs_table",
  "2019_12_14_000001_create_personal_access_tokens_table",
  "2021_12_11_184521_create_strategies_table",
  "2021_12_11_185759_create_albums_table",
  "2021_12_11_191158_create_images_table",
  "2021_12_11_200033_create_configs_table",
  "2022_01_20_201231_create_group_strategy_table",
];

/** config/convention.php's group defaults (the keys GroupConfigKey names). */
export const CONVENTION_GROUP = {
  maximum_file_size: 5120,
  concurrent_upload_num: 3,
  is_enable_scan: 0,
  is_enable_watermark: 0,
  is_enable_original_protection: 0,
  scanned_action: "mark",
  limit_per_minute: 20,
  limit_per_hour: 100,
  limit_per_day: 300,
  limit_per_week: 600,
  limit_per_month: 999,
  accepted_file_suffixes: ["jpeg", "jpg", "png", "gif", "tif", "bmp", "ico", "psd", "webp", "svg"],
  image_save_format: "",
  image_save_quality: 75,
  path_naming_rule: "{Y}/{m}/{d}",
  file_naming_rule: "{uniqid}",
  image_cache_ttl: 2626560,
};

export interface LskyUserFixture {
  id: number;
  groupId: number | null;
  name: string;
  email: string;
  password: string;
  hash: string;
  isAdminer: boolean;
  capacity: string;
  registeredIp: string;
  status: number;
  createdAt: string;
}

export interface LskyImageFixture {
  id: number;
  userId: number | null;
  albumId: number | null;
  strategyId: number | null;
  key: string;
  path: string;
  name: string;
  originName: string;
  mimetype: string;
  extension: string;
  md5: string;
  sha1: string;
  width: number;
  height: number;
  permission: number;
  uploadedIp: string;
  createdAt: string;
  /** The stored file's bytes (what the record names), and whether one is on disk. */
  bytes: Uint8Array;
  /** What the importer must do with it. */
  expect: "import" | "moved" | { refused: RegExp };
}

export interface LskyTokenFixture {
  id: number;
  userId: number;
  plain: string;
  abilities: string;
  expect: "import" | { refused: RegExp };
}

export interface LskySite {
  /** The roots of the local strategies 1 and 2. */
  roots: { uploads: string; other: string };
  strategies: { id: number; key: number; name: string; configs: Record<string, unknown> }[];
  groups: { id: number; name: string; isDefault: boolean; isGuest: boolean; configs: Record<string, unknown>; strategies: number[] }[];
  users: LskyUserFixture[];
  albums: { id: number; userId: number; name: string; intro: string; createdAt: string }[];
  images: LskyImageFixture[];
  tokens: LskyTokenFixture[];
  /** Images beyond the named ones (plain uploads of user 1): what makes an interruption land half-way. */
  bulk: number;
}

const hex = (bytes: Uint8Array, algorithm: "md5" | "sha1" | "sha256") => new Bun.CryptoHasher(algorithm).update(bytes).digest("hex");
/** PHP's uniqid(): 13 hex digits of the time. */
let uniq = 0x65a1b2c3d4e00;
const uniqid = () => (uniq++).toString(16);
/** Str::random(): letters and digits. */
function strRandom(length: number) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}
/** Laravel's bcrypt: PHP writes the `$2y$` prefix. */
async function laravelBcrypt(password: string) {
  return (await Bun.password.hash(password, { algorithm: "bcrypt", cost: 4 })).replace(/^\$2[ab]\$/, "$2y$");
}

/**
 * Builds the schema and fills it. `base` is the new server's address: Lsky's default local strategy served at
 * `${base}/i`, as an install whose APP_URL is the host the new server takes over. `takenEmail` is an account
 * that exists on the new side already.
 */
export async function buildLskySite(sql: SQL, dialect: LskyDialect, dir: string, base: string, takenEmail: string): Promise<LskySite> {
  for (const statement of lskySchema(dialect)) await sql.unsafe(statement);
  const insert = async (table: string, row: Record<string, unknown>) => {
    const cols = Object.keys(row);
    const q = (n: string) => (dialect === "mysql" ? `\`${n}\`` : `"${n}"`);
    await sql.unsafe(`insert into ${q(table)} (${cols.map(q).join(", ")}) values (${cols.map(() => "?").join(", ")})`, cols.map((c) => row[c]) as never[]);
  };
  for (const [i, m] of MIGRATIONS.entries()) await insert("migrations", { id: i + 1, migration: m, batch: 1 });

  const roots = { uploads: join(dir, "storage", "app", "uploads"), other: join(dir, "other-disk") };
  const now = "2024-05-06 07:08:09";
  // InstallSeeder: the configs, the default group and the default local strategy; then a second disk, and an OSS
  for (const [name, value] of Object.entries({
    app_name: "Lsky Pro",
    is_enable_registration: "1",
    is_allow_guest_upload: "1",
    user_initial_capacity: "512000",
  })) {
    await insert("configs", { name, value, created_at: now, updated_at: now });
  }
  const strategies = [
    { id: 1, key: 1, name: "默认本地策略", configs: { root: "/www/wwwroot/lsky/storage/app/uploads", url: `${base}/i` } },
    { id: 2, key: 1, name: "Second disk", configs: { root: "/mnt/second", url: "https://old.example.com/uploads" } },
    {
      id: 3,
      key: 3,
      name: "Aliyun",
      configs: { access_key_id: "k", access_key_secret: "s", bucket: "b", endpoint: "oss-cn-hangzhou.aliyuncs.com", url: "https://oss.example.com" },
    },
  ];
  for (const s of strategies) await insert("strategies", { ...s, intro: "", configs: JSON.stringify(s.configs), created_at: now, updated_at: now });
  const groups = [
    { id: 1, name: "系统默认组&游客组", isDefault: true, isGuest: true, configs: CONVENTION_GROUP, strategies: [1, 3] },
    {
      id: 2,
      name: "VIP",
      isDefault: false,
      isGuest: false,
      configs: {
        ...CONVENTION_GROUP,
        maximum_file_size: 20480,
        concurrent_upload_num: 5,
        limit_per_minute: 0,
        limit_per_hour: 600,
        accepted_file_suffixes: ["png", "jpg", "jpeg", "gif", "webp", "bmp"],
        is_enable_watermark: 1,
        image_save_format: "webp",
        image_save_quality: 90,
      },
      strategies: [2, 1],
    },
  ];
  for (const g of groups) {
    await insert("groups", {
      id: g.id,
      name: g.name,
      is_default: g.isDefault ? 1 : 0,
      is_guest: g.isGuest ? 1 : 0,
      configs: JSON.stringify(g.configs),
      created_at: now,
      updated_at: now,
    });
    for (const s of g.strategies) await insert("group_strategy", { group_id: g.id, strategy_id: s });
  }

  const users: LskyUserFixture[] = [];
  const people: Omit<LskyUserFixture, "hash">[] = [
    {
      id: 1,
      groupId: 1,
      name: "alice",
      email: "alice@example.com",
      password: "alice's old password",
      isAdminer: true,
      capacity: "512000.00",
      registeredIp: "10.0.0.1",
      status: 1,
      createdAt: "2024-01-01 08:00:00",
    },
    {
      id: 2,
      groupId: 2,
      name: "Bob Smith",
      email: "bob@example.com",
      password: "bob-password-1",
      isAdminer: false,
      capacity: "1048576.00",
      registeredIp: "10.0.0.2",
      status: 0,
      createdAt: "2024-01-02 23:30:00",
    },
    {
      id: 3,
      groupId: 2,
      name: "卡罗尔",
      email: "carol@example.com",
      password: "carol 密码 123",
      isAdminer: false,
      capacity: "204800.50",
      registeredIp: "2001:db8::3",
      status: 1,
      createdAt: "2024-02-03 00:15:00",
    },
    {
      id: 4,
      groupId: 1,
      name: "dave",
      email: takenEmail,
      password: "dave-password",
      isAdminer: false,
      capacity: "512000.00",
      registeredIp: "10.0.0.4",
      status: 1,
      createdAt: "2024-02-04 10:00:00",
    },
    {
      id: 5,
      groupId: null,
      name: "erin",
      email: "erin@example.com",
      password: "erin-password",
      isAdminer: false,
      capacity: "100.00",
      registeredIp: "",
      status: 1,
      createdAt: "2024-03-05 12:00:00",
    },
  ];
  for (const p of people) {
    const hash = await laravelBcrypt(p.password);
    users.push({ ...p, hash });
    await insert("users", {
      id: p.id,
      group_id: p.groupId,
      name: p.name,
      email: p.email,
      password: hash,
      is_adminer: p.isAdminer ? 1 : 0,
      capacity: p.capacity,
      url: "",
      configs: JSON.stringify({ default_album: 0, default_strategy: 0, default_permission: 0 }),
      registered_ip: p.registeredIp,
      status: p.status,
      created_at: p.createdAt,
      updated_at: p.createdAt,
    });
  }

  const albums = [
    { id: 1, userId: 1, name: "Screenshots", intro: "Work things", createdAt: "2024-01-05 09:00:00" },
    { id: 2, userId: 3, name: "旅行", intro: "", createdAt: "2024-02-10 10:00:00" },
    { id: 3, userId: 4, name: "Dave's", intro: "", createdAt: "2024-02-11 10:00:00" },
  ];
  for (const a of albums)
    await insert("albums", { id: a.id, user_id: a.userId, name: a.name, intro: a.intro, image_num: 0, created_at: a.createdAt, updated_at: a.createdAt });

  // images: each file written under its strategy's root at its pathname, as ImageService::store does
  const images: LskyImageFixture[] = [];
  let nextId = 1;
  const add = async (o: {
    userId: number | null;
    albumId?: number | null;
    strategyId: number | null;
    format: "png" | "jpeg" | "gif" | "webp";
    size?: [number, number];
    color?: string;
    permission?: number;
    createdAt: string;
    originName?: string;
    name?: string;
    expect: LskyImageFixture["expect"];
    /** Share the file (and its path and name) of an earlier record: Lsky stores identical files once. */
    sameFileAs?: LskyImageFixture;
    write?: "file" | "none" | "corrupt";
    bytes?: Uint8Array;
    extension?: string;
    mimetype?: string;
  }) => {
    const [w, h] = o.sameFileAs ? [o.sameFileAs.width, o.sameFileAs.height] : (o.size ?? [40 + nextId, 30 + nextId]);
    const bytes = o.sameFileAs?.bytes ?? o.bytes ?? (await makeImage(o.format, w, h, o.color ?? `#${(0x102030 + nextId * 0x050403).toString(16).slice(-6)}`));
    const extension = o.extension ?? (o.format === "jpeg" ? "jpg" : o.format);
    const [datePart] = o.createdAt.split(" ");
    const path = o.sameFileAs?.path ?? datePart!.replaceAll("-", "/");
    const name = o.sameFileAs?.name ?? o.name ?? `${uniqid()}.${extension}`;
    const image: LskyImageFixture = {
      id: nextId++,
      userId: o.userId,
      albumId: o.albumId ?? null,
      strategyId: o.strategyId,
      key: strRandom(6),
      path,
      name,
      originName: o.originName ?? `photo-${nextId}.${extension}`,
      mimetype: o.mimetype ?? (o.format === "jpeg" ? "image/jpeg" : `image/${o.format}`),
      extension,
      md5: hex(bytes, "md5"),
      sha1: hex(bytes, "sha1"),
      width: w,
      height: h,
      permission: o.permission ?? 1,
      uploadedIp: `192.0.2.${nextId}`,
      createdAt: o.createdAt,
      bytes,
      expect: o.expect,
    };
    images.push(image);
    const root = o.strategyId === 2 ? roots.other : roots.uploads;
    const file = join(root, path, name);
    if (!o.sameFileAs && o.write !== "none") {
      mkdirSync(dirname(file), { recursive: true });
      const written = o.write === "corrupt" ? Uint8Array.from(bytes, (b, i) => (i === bytes.length - 20 ? b ^ 0xff : b)) : bytes;
      writeFileSync(file, written);
    }
    await insert("images", {
      id: image.id,
      user_id: image.userId,
      album_id: image.albumId,
      group_id: image.userId === null ? 1 : (people.find((p) => p.id === image.userId)?.groupId ?? null),
      strategy_id: image.strategyId,
      key: image.key,
      path: image.path,
      name: image.name,
      origin_name: image.originName,
      alias_name: "",
      size: (bytes.length / 1024).toFixed(2),
      mimetype: image.mimetype,
      extension: image.extension,
      md5: image.md5,
      sha1: image.sha1,
      width: image.width,
      height: image.height,
      permission: image.permission,
      is_unhealthy: 0,
      uploaded_ip: image.uploadedIp,
      created_at: image.createdAt,
      updated_at: image.createdAt,
    });
    return image;
  };
  const first = await add({ userId: 1, albumId: 1, strategyId: 1, format: "png", createdAt: "2024-01-02 03:04:05", originName: "截图.png", expect: "import" });
  await add({ userId: 1, strategyId: 1, format: "jpeg", size: [120, 80], permission: 0, createdAt: "2024-01-02 23:59:59", expect: "import" });
  await add({ userId: 1, strategyId: 1, format: "png", createdAt: "2024-01-03 01:00:00", sameFileAs: first, originName: "again.png", expect: "moved" });
  await add({ userId: 2, strategyId: 2, format: "webp", createdAt: "2024-01-04 12:00:00", expect: "import" });
  await add({ userId: 3, albumId: 2, strategyId: 2, format: "gif", permission: 0, createdAt: "2024-02-12 13:14:15", expect: "import" });
  await add({ userId: null, strategyId: 1, format: "png", createdAt: "2024-02-13 06:00:00", expect: "import" });
  await add({
    userId: 1,
    strategyId: 1,
    format: "png",
    bytes: new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>'),
    extension: "svg",
    mimetype: "image/svg+xml",
    size: [10, 10],
    createdAt: "2024-02-14 06:00:00",
    expect: { refused: /\.svg files are not served here/ },
  });
  await add({ userId: 1, strategyId: 1, format: "png", write: "none", createdAt: "2024-02-15 06:00:00", expect: { refused: /is missing/ } });
  await add({
    userId: 1,
    strategyId: 1,
    format: "png",
    write: "corrupt",
    createdAt: "2024-02-16 06:00:00",
    expect: { refused: /differs from what Lsky Pro recorded \(md5/ },
  });
  await add({
    userId: 4,
    albumId: 3,
    strategyId: 1,
    format: "png",
    createdAt: "2024-02-17 06:00:00",
    expect: { refused: /its owner \(user 4\) was not imported/ },
  });
  await add({
    userId: 3,
    strategyId: 3,
    format: "png",
    createdAt: "2024-02-18 06:00:00",
    expect: { refused: /its strategy 3 was not imported: driver Aliyun OSS has no driver here/ },
  });
  await add({ userId: 5, strategyId: 1, format: "png", name: "截图 1.png", createdAt: "2024-03-04 05:06:07", expect: "moved" });
  const bulk = 48;
  for (let i = 0; i < bulk; i++)
    await add({
      userId: 1,
      strategyId: 1,
      format: "png",
      size: [20 + i, 20],
      createdAt: `2024-04-${String(1 + (i % 28)).padStart(2, "0")} 10:00:00`,
      expect: "import",
    });

  // Sanctum tokens: createToken($user->email) stores hash('sha256', $plain) with abilities ["*"]
  const tokens: LskyTokenFixture[] = [
    { id: 1, userId: 1, plain: strRandom(40), abilities: '["*"]', expect: "import" },
    { id: 2, userId: 2, plain: strRandom(40), abilities: '["*"]', expect: "import" },
    { id: 3, userId: 3, plain: strRandom(40), abilities: '["*"]', expect: "import" },
    { id: 4, userId: 3, plain: strRandom(40), abilities: '["images:read"]', expect: { refused: /it may do images:read only/ } },
    { id: 5, userId: 4, plain: strRandom(40), abilities: '["*"]', expect: { refused: /its owner \(user 4\) was not imported/ } },
  ];
  for (const t of tokens) {
    const email = people.find((p) => p.id === t.userId)!.email;
    await insert("personal_access_tokens", {
      id: t.id,
      tokenable_type: "App\\Models\\User",
      tokenable_id: t.userId,
      name: email,
      token: hex(new TextEncoder().encode(t.plain), "sha256"),
      abilities: t.abilities,
      last_used_at: t.id === 1 ? "2024-05-01 10:00:00" : null,
      created_at: "2024-04-30 10:00:00",
      updated_at: "2024-04-30 10:00:00",
    });
  }
  return { roots, strategies, groups, users, albums, images, tokens, bulk };
}

/** What a client holds for a Lsky token: `ID|PLAINTEXT`. */
export const clientToken = (t: LskyTokenFixture) => `${t.id}|${t.plain}`;
