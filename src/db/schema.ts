import { sql } from "drizzle-orm";
import {
  type AnyPgColumn,
  bigint,
  bigserial,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  serial,
  text,
  timestamp,
  uniqueIndex,
} from "drizzle-orm/pg-core";

const createdAt = () => timestamp("created_at", { withTimezone: true, mode: "date" }).notNull().defaultNow();

/** Site-wide switches: a single row with id 1. */
export const settings = pgTable("settings", {
  id: integer("id").primaryKey().default(1),
  apiEnabled: boolean("api_enabled").notNull().default(true),
  guestUploadEnabled: boolean("guest_upload_enabled").notNull().default(false),
  // visitors may create their own account on the user center's sign-up page
  registrationEnabled: boolean("registration_enabled").notNull().default(false),
  // the site's identity in the pages (docs/decisions/pages-design-system.md): "" = the default name and mark
  siteName: text("site_name").notNull().default(""),
  // a `data:` URL of a small raster image (PNG, WebP, GIF, JPEG, ICO), checked by the admin API; null = the default
  siteLogo: text("site_logo"),
  siteFavicon: text("site_favicon"),
  // `#rrggbb`, "" = the default accent
  accentColor: text("accent_color").notNull().default(""),
  // the pages' language when neither the account nor the browser chooses one
  defaultLocale: text("default_locale").notNull().default("en"),
  // the SMTP server of the site's mail (services/mail/config.ts); SMTP_HOST in the environment wins over these
  smtpHost: text("smtp_host").notNull().default(""),
  smtpPort: integer("smtp_port").notNull().default(587),
  smtpSecurity: text("smtp_security").notNull().default("starttls"),
  smtpUsername: text("smtp_username").notNull().default(""),
  // sealed with the site's secret key (webhooks/secret-box.ts); never returned
  smtpPasswordSealed: text("smtp_password_sealed"),
  mailFrom: text("mail_from").notNull().default(""),
  // accounts made by sign-up upload nothing until they confirm their email address (services/mail/verification.ts)
  emailVerification: boolean("email_verification").notNull().default(false),
  // the sign-in page offers the password form; off: only the identity providers' buttons (docs/single-sign-on.md)
  passwordSignIn: boolean("password_sign_in").notNull().default(true),
  // who must sign in with a second factor (docs/decisions/sign-in-core.md): nobody more, administrators, everyone
  requireSecondFactor: text("require_second_factor").$type<SecondFactorRequirement>().notNull().default("off"),
});

export type SecondFactorRequirement = "off" | "admins" | "everyone";

type ReviewProvider = "none" | "webhook";
type UserRole = "user" | "admin";
/** The format processing on upload converts to. */
export type ConvertFormat = "webp" | "avif" | "jpeg";
/** What of an upload's metadata is stored (see src/images/metadata/policy.ts). */
export type MetadataPolicy = "keep" | "strip_location" | "strip_all";
/** What a metadata policy removed from an upload: the policy that removed it, and the blocks by name (GPS, XMP…). */
export interface MetadataRemoved {
  policy?: MetadataPolicy;
  removed: string[];
}

export const groups = pgTable(
  "groups",
  {
    id: serial("id").primaryKey(),
    name: text("name").notNull(),
    isDefault: boolean("is_default").notNull().default(false),
    isGuest: boolean("is_guest").notNull().default(false),
    enabled: boolean("enabled").notNull().default(true),
    allowApi: boolean("allow_api").notNull().default(true),
    maxFileSizeKb: integer("max_file_size_kb").notNull().default(10240),
    allowedExtensions: jsonb("allowed_extensions").$type<string[]>().notNull().default(sql`'["jpg","jpeg","png","gif","webp","avif"]'::jsonb`),
    maxPixels: bigint("max_pixels", { mode: "number" }).notNull().default(100_000_000),
    // null = unlimited
    uploadsPerMinute: integer("uploads_per_minute"),
    uploadsPerHour: integer("uploads_per_hour"),
    uploadsPerDay: integer("uploads_per_day"),
    uploadsPerWeek: integer("uploads_per_week"),
    uploadsPerMonth: integer("uploads_per_month"),
    concurrentUploads: integer("concurrent_uploads"),
    retentionMaxSeconds: integer("retention_max_seconds"),
    defaultCapacityKb: bigint("default_capacity_kb", { mode: "number" }).notNull().default(1_048_576),
    reviewProvider: text("review_provider").$type<ReviewProvider>().notNull().default("none"),
    reviewWebhookUrl: text("review_webhook_url"),
    reviewTimeoutMs: integer("review_timeout_ms").notNull().default(5000),
    reviewFailOpen: boolean("review_fail_open").notNull().default(false),
    // privacy by default: new groups, and the groups of installs that existed before the column, strip locations
    metadata: text("metadata").$type<MetadataPolicy>().notNull().default("strip_location"),
    // processing on upload (src/images/process.ts): off while all of these are null
    convertFormat: text("convert_format").$type<ConvertFormat>(),
    convertQuality: integer("convert_quality").notNull().default(80),
    maxWidth: integer("max_width"),
    maxHeight: integer("max_height"),
    jpegMaxQuality: integer("jpeg_max_quality"),
    // WEBHOOK_ALLOW's internal hosts open to the members' own webhook endpoints too (drizzle/0014); off by default
    webhookAllowInternal: boolean("webhook_allow_internal").notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [
    check("groups_metadata_check", sql`${t.metadata} in ('keep', 'strip_location', 'strip_all')`),
    check("groups_convert_format_check", sql`${t.convertFormat} in ('webp', 'avif', 'jpeg')`),
    check("groups_convert_quality_check", sql`${t.convertQuality} between 1 and 100`),
    check("groups_max_width_check", sql`${t.maxWidth} >= 1`),
    check("groups_max_height_check", sql`${t.maxHeight} >= 1`),
    check("groups_jpeg_max_quality_check", sql`${t.jpegMaxQuality} between 1 and 100`),
  ],
);

type StrategyDriver = "local" | "s3";

export const strategies = pgTable("strategies", {
  id: serial("id").primaryKey(),
  name: text("name").notNull(),
  driver: text("driver").$type<StrategyDriver>().notNull(),
  config: jsonb("config").$type<Record<string, unknown>>().notNull().default(sql`'{}'::jsonb`),
  // null = unlimited
  quotaKb: bigint("quota_kb", { mode: "number" }),
  usedBytes: bigint("used_bytes", { mode: "number" }).notNull().default(0),
  enabled: boolean("enabled").notNull().default(true),
  createdAt: createdAt(),
});

export const groupStrategies = pgTable(
  "group_strategies",
  {
    groupId: integer("group_id")
      .notNull()
      .references(() => groups.id, { onDelete: "cascade" }),
    strategyId: integer("strategy_id")
      .notNull()
      .references(() => strategies.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.strategyId] })],
);

export const users = pgTable(
  "users",
  {
    id: serial("id").primaryKey(),
    username: text("username").notNull(),
    name: text("name").notNull(),
    email: text("email").notNull(),
    avatar: text("avatar"),
    groupId: integer("group_id")
      .notNull()
      .references(() => groups.id),
    enabled: boolean("enabled").notNull().default(true),
    // null = the group's default capacity
    capacityKb: bigint("capacity_kb", { mode: "number" }),
    // the sum of the account's images' own bytes (their `size`), exactly what its listing adds up to — not disk blocks,
    // inodes or thumbnails: the number of objects an account makes is bounded by its group's
    // frequency limits (each accepted upload stores at most two objects), not by capacity
    usedBytes: bigint("used_bytes", { mode: "number" }).notNull().default(0),
    imageNum: integer("image_num").notNull().default(0),
    albumNum: integer("album_num").notNull().default(0),
    registeredIp: text("registered_ip").notNull().default(""),
    passwordHash: text("password_hash"),
    // an administrator may use the admin pages of the site (ADMIN_TOKEN stays what automation uses)
    role: text("role").$type<UserRole>().notNull().default("user"),
    // the pages' language this account chose; null = the browser's, then the site's
    locale: text("locale"),
    // false only for an account made by sign-up while email verification is on, until it follows the mailed link
    emailVerified: boolean("email_verified").notNull().default(true),
    createdAt: createdAt(),
  },
  (t) => [
    check("users_role_check", sql`${t.role} in ('user', 'admin')`),
    uniqueIndex("users_username_key").on(t.username),
    uniqueIndex("users_email_key").on(t.email),
    // sign-in by username ignores case
    index("users_username_lower_idx").on(sql`lower(${t.username})`),
  ],
);

/**
 * Signed-in browser sessions of the user center. The cookie holds a random secret; only its SHA-256 is stored,
 * so every instance knows a session and a database leak signs nobody in. The form token (CSRF) is derived from
 * the secret, not stored. A session ends at `expires_at` (idle and absolute limits) or when it is deleted (sign-out).
 */
export const sessions = pgTable(
  "sessions",
  {
    id: serial("id").primaryKey(),
    secretHash: text("secret_hash").notNull(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    ip: text("ip").notNull().default(""),
    // the browser's User-Agent at sign-in (at most 300 characters), to tell sessions apart on the account page
    userAgent: text("user_agent").notNull().default(""),
    createdAt: createdAt(),
    lastSeenAt: timestamp("last_seen_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    // how it signed in: password, password+totp, password+passkey, password+recovery, passkey, oidc:<provider>…
    method: text("method").notNull().default("password"),
  },
  (t) => [uniqueIndex("sessions_secret_hash_key").on(t.secretHash), index("sessions_user_idx").on(t.userId), index("sessions_expires_at_idx").on(t.expiresAt)],
);

export const albums = pgTable(
  "albums",
  {
    id: serial("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    createdAt: createdAt(),
    /** Its images, kept by triggers on images (drizzle/0013): every path that adds, moves or removes one counts. */
    imageNum: integer("image_num").notNull().default(0),
  },
  (t) => [index("albums_user_idx").on(t.userId)],
);

export type TokenKind = "permanent" | "temporary";

/** Permanent API tokens and temporary upload tokens; only the SHA-256 of the secret is stored. */
export const tokens = pgTable(
  "tokens",
  {
    id: serial("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    kind: text("kind").$type<TokenKind>().notNull(),
    secretHash: text("secret_hash").notNull(),
    expiredAt: timestamp("expired_at", { withTimezone: true, mode: "date" }),
    revokedAt: timestamp("revoked_at", { withTimezone: true, mode: "date" }),
    // the permanent token that issued a temporary one; a temporary token never outlives its issuer
    parentTokenId: integer("parent_token_id").references((): AnyPgColumn => tokens.id, { onDelete: "cascade" }),
    // the user center's session that obtained this temporary token for its upload page: sign-out removes it
    sessionId: integer("session_id").references(() => sessions.id, { onDelete: "cascade" }),
    // the owner's name for a permanent token, shown on the API Tokens page
    label: text("label"),
    // written at most once a minute per token, off the request's path
    lastUsedAt: timestamp("last_used_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("tokens_secret_hash_key").on(t.secretHash),
    index("tokens_user_idx").on(t.userId),
    index("tokens_parent_idx").on(t.parentTokenId).where(sql`${t.parentTokenId} is not null`),
    index("tokens_session_idx").on(t.sessionId).where(sql`${t.sessionId} is not null`),
  ],
);

export const images = pgTable(
  "images",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    key: text("key").notNull(),
    userId: integer("user_id").references(() => users.id, { onDelete: "cascade" }),
    albumId: integer("album_id").references(() => albums.id, { onDelete: "set null" }),
    strategyId: integer("strategy_id")
      .notNull()
      .references(() => strategies.id),
    path: text("path").notNull(),
    thumbnailPath: text("thumbnail_path"),
    name: text("name").notNull(),
    originName: text("origin_name").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    mimetype: text("mimetype").notNull(),
    extension: text("extension").notNull(),
    width: integer("width").notNull(),
    height: integer("height").notNull(),
    md5: text("md5").notNull(),
    sha1: text("sha1").notNull(),
    isPublic: boolean("is_public").notNull().default(true),
    expiredAt: timestamp("expired_at", { withTimezone: true, mode: "date" }),
    uploaderIp: text("uploader_ip").notNull().default(""),
    // what the group's metadata policy removed at upload: `{ removed: [] }` = nothing; null = not recorded (older uploads)
    metadataRemoved: jsonb("metadata_removed").$type<MetadataRemoved>().default(sql`'{"removed":[]}'::jsonb`),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("images_key_key").on(t.key),
    uniqueIndex("images_name_key").on(t.name),
    uniqueIndex("images_path_key").on(t.path),
    index("images_thumbnail_path_idx").on(t.thumbnailPath),
    // ascending: scanned backwards it serves "order by created_at desc, id desc" (nulls first), top-N without a sort
    index("images_owner_created_idx").on(t.userId, t.createdAt, t.id),
    // the user center's "largest first" and album views
    index("images_owner_size_idx").on(t.userId, t.size, t.id),
    index("images_album_created_idx").on(t.albumId, t.createdAt, t.id).where(sql`${t.albumId} is not null`),
    // the user center's "public or private only" and "in no album" views, newest first without a sort
    index("images_owner_visibility_created_idx").on(t.userId, t.isPublic, t.createdAt, t.id),
    index("images_owner_no_album_created_idx").on(t.userId, t.createdAt, t.id).where(sql`${t.albumId} is null`),
    index("images_expired_at_idx").on(t.expiredAt).where(sql`${t.expiredAt} is not null`),
  ],
);

/** The output formats of variants: `gif` only for a resized animated GIF kept as a GIF. */
export type VariantFormat = "webp" | "avif" | "jpeg" | "png" | "gif";

/**
 * Variants of an image made on demand: one per (image, width, format), stored through the image's
 * strategy at `path`. A row goes with its image (cascade); the delete queues the variants' objects for removal in
 * the same transaction. Not charged to any capacity.
 */
export const imageVariants = pgTable(
  "image_variants",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    imageId: bigint("image_id", { mode: "number" })
      .notNull()
      .references(() => images.id, { onDelete: "cascade" }),
    width: integer("width").notNull(),
    format: text("format").$type<VariantFormat>().notNull(),
    path: text("path").notNull(),
    size: bigint("size", { mode: "number" }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("image_variants_image_width_format_key").on(t.imageId, t.width, t.format),
    uniqueIndex("image_variants_path_key").on(t.path),
    check("image_variants_format_check", sql`${t.format} in ('webp', 'avif', 'jpeg', 'png', 'gif')`),
  ],
);

/** One row per accepted upload, kept for the frequency windows (a month at most), even after the image is deleted. */
export const uploadLog = pgTable(
  "upload_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    subject: text("subject").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("upload_log_subject_created_idx").on(t.subject, t.createdAt)],
);

/** Uploads in flight, for the concurrency limit; a lease outlives a crashed process only until expires_at. */
export const uploadLeases = pgTable(
  "upload_leases",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    subject: text("subject").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("upload_leases_subject_idx").on(t.subject, t.expiresAt)],
);

export type RemovalReason = "upload" | "delete" | "expiry";

/**
 * Objects to remove from a strategy's storage, the one way objects leave it besides the reconciler. A row is due at
 * `due_at` (the database's clock): until then its holder owns it (an upload in flight renews it like its upload
 * lease; a removal that failed waits out its backoff); from then on any instance's removal worker takes it with
 * FOR UPDATE SKIP LOCKED, removes the object and deletes the row. An image's record and the rows for its objects
 * are never both present: an upload deletes its rows in the transaction that inserts the record, a delete inserts
 * them in the transaction that deletes it. A row outlives a crash of any process: removal needs only a live instance.
 */
export const pendingRemovals = pgTable(
  "pending_removals",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    // a deleted strategy's storage is no longer ours to clean: its rows go with it
    strategyId: integer("strategy_id")
      .notNull()
      .references(() => strategies.id, { onDelete: "cascade" }),
    path: text("path").notNull(),
    // upload: an upload's planned objects, given up if its lease lapses; delete / expiry: a deleted image's objects
    reason: text("reason").$type<RemovalReason>().notNull(),
    dueAt: timestamp("due_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
    // storage failures so far; the next try waits min(2^attempts, 300) seconds
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    createdAt: createdAt(),
  },
  (t) => [index("pending_removals_due_idx").on(t.dueAt), index("pending_removals_strategy_path_idx").on(t.strategyId, t.path)],
);

/**
 * Every administrative action, by an administrator's session or by ADMIN_TOKEN: who, what, which record,
 * when and from where. Written in the transaction of the change where there is one.
 */
export const auditLog = pgTable(
  "audit_log",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    // the administrator's account, or null for ADMIN_TOKEN (automation, the CLI)
    actorUserId: integer("actor_user_id").references(() => users.id, { onDelete: "set null" }),
    // "alice (user 3)" or "ADMIN_TOKEN", kept as written when the account goes
    actor: text("actor").notNull(),
    action: text("action").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id").notNull().default(""),
    detail: jsonb("detail").$type<Record<string, unknown>>().notNull().default(sql`'{}'::jsonb`),
    ip: text("ip").notNull().default(""),
    createdAt: createdAt(),
  },
  (t) => [index("audit_log_created_idx").on(t.createdAt, t.id)],
);

/** One-time links to set a password, made by an administrator; valid for an hour, used once. */
export const passwordLinks = pgTable(
  "password_links",
  {
    id: serial("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("password_links_token_hash_key").on(t.tokenHash), index("password_links_user_idx").on(t.userId)],
);

/**
 * Links that confirm an account's email address (services/mail/verification.ts): valid for a day, used once, only
 * the SHA-256 of the secret stored; `email` is the address it was sent to (an email change voids it).
 */
export const emailVerifications = pgTable(
  "email_verifications",
  {
    id: serial("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    email: text("email").notNull(),
    tokenHash: text("token_hash").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("email_verifications_token_hash_key").on(t.tokenHash), index("email_verifications_user_idx").on(t.userId, t.createdAt)],
);

/**
 * Invitations to sign up (services/invitations.ts): a number of uses, an expiry, the group the accounts join. Only
 * the SHA-256 of the code is stored. A use is charged by a conditional UPDATE (`uses < max_uses`), and the check
 * holds the bound in the database as well.
 */
export const invitations = pgTable(
  "invitations",
  {
    id: serial("id").primaryKey(),
    codeHash: text("code_hash").notNull(),
    groupId: integer("group_id")
      .notNull()
      .references(() => groups.id, { onDelete: "cascade" }),
    maxUses: integer("max_uses").notNull(),
    uses: integer("uses").notNull().default(0),
    note: text("note").notNull().default(""),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("invitations_code_hash_key").on(t.codeHash),
    check("invitations_uses_check", sql`${t.uses} >= 0 and ${t.uses} <= ${t.maxUses}`),
    check("invitations_max_uses_check", sql`${t.maxUses} >= 1`),
  ],
);

/** What an event can be about. */
export const EVENT_TYPES = ["image.uploaded", "image.deleted", "image.expired", "token.revoked", "user.disabled"] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Where events are sent. A user's endpoint (owner set) receives the events of that user's own images and
 * tokens; a site-wide endpoint (owner null, made by an administrator) receives every event. The signing secret is
 * stored encrypted (services' webhooks/secret-box.ts): it must be read back to sign, so it cannot be hashed.
 */
export const webhookEndpoints = pgTable(
  "webhook_endpoints",
  {
    id: serial("id").primaryKey(),
    ownerId: integer("owner_id").references(() => users.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    description: text("description").notNull().default(""),
    events: text("events").array().$type<EventType[]>().notNull(),
    secretSealed: text("secret_sealed").notNull(),
    enabled: boolean("enabled").notNull().default(true),
    // why it stopped: "answered 410 Gone", "failing for a day", "by its owner"
    disabledReason: text("disabled_reason"),
    disabledAt: timestamp("disabled_at", { withTimezone: true, mode: "date" }),
    // the first failed attempt since the last delivered one: a day of failures disables the endpoint
    failingSince: timestamp("failing_since", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [index("webhook_endpoints_owner_idx").on(t.ownerId)],
);

type DeliveryStatus = "pending" | "delivered" | "failed";

/**
 * One event for one endpoint, and the log of its attempts. The body is kept as sent (signatures cover its
 * bytes, and a retry sends the same ones). `seq` orders the events: a delivery waits while an earlier one of the same
 * subject (the image, the token, the user) to the same endpoint is still pending.
 */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    endpointId: integer("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    messageId: text("message_id").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    eventType: text("event_type").notNull(),
    subject: text("subject").notNull(),
    body: text("body").notNull(),
    status: text("status").$type<DeliveryStatus>().notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: timestamp("next_attempt_at", { withTimezone: true, mode: "date" }),
    lastAttemptAt: timestamp("last_attempt_at", { withTimezone: true, mode: "date" }),
    lastStatusCode: integer("last_status_code"),
    lastLatencyMs: integer("last_latency_ms"),
    lastError: text("last_error"),
    deliveredAt: timestamp("delivered_at", { withTimezone: true, mode: "date" }),
    // while an instance sends it or holds it for a slot (drizzle/0014): past it, any instance queues it again
    leaseUntil: timestamp("lease_until", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_endpoint_message_key").on(t.endpointId, t.messageId),
    index("webhook_deliveries_endpoint_created_idx").on(t.endpointId, t.id),
    index("webhook_deliveries_pending_subject_idx").on(t.endpointId, t.subject, t.seq).where(sql`${t.status} = 'pending'`),
  ],
);

/** Graphile-worker's workers of each instance and when they were last seen (webhooks/queue.ts). */
export const jobWorkers = pgTable("job_workers", {
  workerId: text("worker_id").primaryKey(),
  instance: text("instance").notNull(),
  seenAt: timestamp("seen_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

/** What an importer brings in (services/import/). */
export type ImportKind = "strategy" | "group" | "user" | "album" | "image" | "token";

/**
 * Records imported from another host: the source's id and ours, written in the transaction that creates our record
 * (db/repositories/imports.ts). A second import skips what is here, an interrupted one continues after it, and a
 * Lsky Pro client's `ID|PLAINTEXT` token is found by the id it holds. Rows stay when our record is deleted later:
 * an import run again does not bring back what an administrator removed.
 */
export const importedRecords = pgTable(
  "imported_records",
  {
    source: text("source").notNull(),
    kind: text("kind").$type<ImportKind>().notNull(),
    sourceId: bigint("source_id", { mode: "number" }).notNull(),
    targetId: bigint("target_id", { mode: "number" }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.source, t.kind, t.sourceId] }),
    check("imported_records_kind_check", sql`${t.kind} in ('strategy', 'group', 'user', 'album', 'image', 'token')`),
  ],
);

/**
 * A sign-in under way (docs/decisions/sign-in-core.md): the first step passed (a password, a provider) and a second
 * factor or an enrolment is still due, or a passwordless passkey ceremony started. Bound to the browser by a cookie
 * whose secret is stored hashed; it is no session: it opens no page, and the session's own secret is made only when
 * the sign-in completes. Lives ten minutes.
 */
export const pendingSignIns = pgTable(
  "pending_sign_ins",
  {
    id: serial("id").primaryKey(),
    secretHash: text("secret_hash").notNull(),
    // null while a passwordless passkey ceremony has not named its account yet
    userId: integer("user_id").references(() => users.id, { onDelete: "cascade" }),
    // "second_factor" (the account has one), "enrol" (the site requires one, the account has none), "passkey"
    stage: text("stage").$type<"second_factor" | "enrol" | "passkey">().notNull(),
    // the first step: password, oidc:<provider>…
    method: text("method").notNull().default(""),
    next: text("next").notNull().default(""),
    // wrong codes sent in this sign-in: five end it
    failures: integer("failures").notNull().default(0),
    ip: text("ip").notNull().default(""),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [uniqueIndex("pending_sign_ins_secret_hash_key").on(t.secretHash), index("pending_sign_ins_expires_at_idx").on(t.expiresAt)],
);

/**
 * An account's TOTP authenticator (RFC 6238), at most one. The secret must be read back to check codes, so it is
 * sealed like the webhook signing secrets (webhooks/secret-box.ts). `confirmedAt` is null until a first code proves
 * the authenticator holds it; `lastStep` is the time step of the last code accepted: a code of that step or an
 * earlier one is refused (no replay).
 */
export const totpAuthenticators = pgTable("totp_authenticators", {
  userId: integer("user_id")
    .primaryKey()
    .references(() => users.id, { onDelete: "cascade" }),
  secret: text("secret").notNull(),
  lastStep: bigint("last_step", { mode: "number" }),
  confirmedAt: timestamp("confirmed_at", { withTimezone: true, mode: "date" }),
  createdAt: createdAt(),
});

/** Ten one-time recovery codes per account, made with its TOTP authenticator: SHA-256 of each stored, used once. */
export const recoveryCodes = pgTable(
  "recovery_codes",
  {
    id: serial("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    codeHash: text("code_hash").notNull(),
    usedAt: timestamp("used_at", { withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [index("recovery_codes_user_idx").on(t.userId), uniqueIndex("recovery_codes_hash_key").on(t.userId, t.codeHash)],
);

/** An account's passkeys (WebAuthn credentials), each named by its owner: a second factor and a passwordless sign-in. */
export const passkeys = pgTable(
  "passkeys",
  {
    id: serial("id").primaryKey(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // the credential's id, base64url, as the authenticator gives it
    credentialId: text("credential_id").notNull(),
    // the COSE public key, base64url
    publicKey: text("public_key").notNull(),
    // the authenticator's signature counter: one that does not move forward is refused (a cloned key)
    counter: bigint("counter", { mode: "number" }).notNull().default(0),
    transports: jsonb("transports").$type<string[]>().notNull().default(sql`'[]'::jsonb`),
    name: text("name").notNull(),
    backedUp: boolean("backed_up").notNull().default(false),
    createdAt: createdAt(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [uniqueIndex("passkeys_credential_id_key").on(t.credentialId), index("passkeys_user_idx").on(t.userId)],
);

/**
 * A WebAuthn challenge given out and not yet answered: bound to the session (a passkey being added) or to the pending
 * sign-in that asked for it, taken (deleted) by the answer whatever its outcome, so a challenge is used once.
 */
export const passkeyChallenges = pgTable(
  "passkey_challenges",
  {
    challenge: text("challenge").primaryKey(),
    purpose: text("purpose").$type<"register" | "authenticate">().notNull(),
    userId: integer("user_id").references(() => users.id, { onDelete: "cascade" }),
    sessionId: integer("session_id").references(() => sessions.id, { onDelete: "cascade" }),
    pendingId: integer("pending_id").references(() => pendingSignIns.id, { onDelete: "cascade" }),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("passkey_challenges_expires_at_idx").on(t.expiresAt)],
);

/**
 * OpenID Connect providers the sign-in page offers (docs/single-sign-on.md). The client secret is sealed like the
 * webhook secrets (webhooks/secret-box.ts) and never answered by the admin API. `slug` names the callback,
 * BASE_URL/user/oidc/<slug>/callback, the redirect URI registered at the provider.
 */
export const oidcProviders = pgTable(
  "oidc_providers",
  {
    id: serial("id").primaryKey(),
    slug: text("slug").notNull(),
    label: text("label").notNull(),
    issuer: text("issuer").notNull(),
    clientId: text("client_id").notNull(),
    // sealed; "" = none (a public client)
    clientSecret: text("client_secret").notNull().default(""),
    scopes: text("scopes").notNull().default("openid profile email"),
    usernameClaim: text("username_claim").notNull().default("preferred_username"),
    emailClaim: text("email_claim").notNull().default("email"),
    // the claim listing the person's groups at the provider; null = roles and groups are not taken from it
    groupsClaim: text("groups_claim"),
    // a value of the groups claim that makes the account an administrator (and its absence a user); null = the role is left alone
    adminGroup: text("admin_group"),
    // values of the groups claim that put the account in a group of ours: the first that matches wins
    groupMap: jsonb("group_map").$type<{ value: string; groupId: number }[]>().notNull().default(sql`'[]'::jsonb`),
    // a person the site does not know yet gets an account; off: a clear refusal
    autoProvision: boolean("auto_provision").notNull().default(false),
    enabled: boolean("enabled").notNull().default(true),
    createdAt: createdAt(),
    updatedAt: timestamp("updated_at", { withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("oidc_providers_slug_key").on(t.slug)],
);

/**
 * An account's identity at a provider, keyed by the ID token's issuer and subject: never by an email or an address.
 * An account holds at most one identity per provider, so two identities racing to link one account cannot both win.
 */
export const oidcIdentities = pgTable(
  "oidc_identities",
  {
    id: serial("id").primaryKey(),
    providerId: integer("provider_id")
      .notNull()
      .references(() => oidcProviders.id, { onDelete: "cascade" }),
    issuer: text("issuer").notNull(),
    subject: text("subject").notNull(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // the email the provider gave at the last sign-in, for the account page and the audit log
    email: text("email").notNull().default(""),
    createdAt: createdAt(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true, mode: "date" }),
  },
  (t) => [
    uniqueIndex("oidc_identities_issuer_subject_key").on(t.issuer, t.subject),
    uniqueIndex("oidc_identities_provider_user_key").on(t.providerId, t.userId),
    index("oidc_identities_user_idx").on(t.userId),
  ],
);

/**
 * A provider sign-in under way: the `state` sent (its SHA-256), the `nonce` and PKCE verifier to check the answer
 * with, and the browser it was started in (the SHA-256 of its flow cookie's secret). Deleted when the callback reads
 * it: each is used once. Lives ten minutes.
 */
export const oidcFlows = pgTable(
  "oidc_flows",
  {
    stateHash: text("state_hash").primaryKey(),
    browserHash: text("browser_hash").notNull(),
    providerId: integer("provider_id")
      .notNull()
      .references(() => oidcProviders.id, { onDelete: "cascade" }),
    nonce: text("nonce").notNull(),
    codeVerifier: text("code_verifier").notNull(),
    next: text("next").notNull().default(""),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [index("oidc_flows_expires_at_idx").on(t.expiresAt)],
);

/**
 * A new identity waiting to be linked to the account that has its (provider-verified) email: linked once the person
 * signs in to that account with its password in the same browser. Used once; five wrong passwords end it; lives ten
 * minutes.
 */
export const oidcLinkRequests = pgTable(
  "oidc_link_requests",
  {
    id: serial("id").primaryKey(),
    // the SHA-256 of the browser's flow cookie's secret: one request per browser
    browserHash: text("browser_hash").notNull(),
    providerId: integer("provider_id")
      .notNull()
      .references(() => oidcProviders.id, { onDelete: "cascade" }),
    issuer: text("issuer").notNull(),
    subject: text("subject").notNull(),
    email: text("email").notNull(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    next: text("next").notNull().default(""),
    failures: integer("failures").notNull().default(0),
    createdAt: createdAt(),
    expiresAt: timestamp("expires_at", { withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [uniqueIndex("oidc_link_requests_browser_hash_key").on(t.browserHash), index("oidc_link_requests_expires_at_idx").on(t.expiresAt)],
);
