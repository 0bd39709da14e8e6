import { desc, lt, sql } from "drizzle-orm";
import type { Executor } from "../db/client.ts";
import { auditLog } from "../db/schema.ts";

/**
 * The audit log of administration. Every change through the admin API is written by `requireAdmin`
 * (routes/admin/common.ts) once it has succeeded: who (ADMIN_TOKEN, or the administrator whose session made the
 * change through the admin pages), what (the method and route), which record, when and from where, and the fields sent
 * (secrets replaced by "(set)"). The admin pages make every change through the admin API in-process (web/admin/api.ts),
 * so nothing an administrator does in the browser escapes the log, nor the API's validation.
 */
export interface Actor {
  userId: number | null;
  label: string;
  ip: string;
}

export const TOKEN_ACTOR = "ADMIN_TOKEN";

/** Field names whose values never reach the log (a switch such as password_sign_in is no secret: its true or false does). */
const SECRET = /password|secret|token|access_key/i;
/** A logged request body is cut at this many characters of JSON. */
const DETAIL_MAX = 4000;

/** The fields sent, with secrets replaced and the whole bounded. */
export function auditDetail(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return {};
  const redact = (value: unknown, depth = 0): unknown => {
    if (value === null || typeof value !== "object") return value;
    if (depth > 3) return "…";
    if (Array.isArray(value)) return value.slice(0, 50).map((v) => redact(v, depth + 1));
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, SECRET.test(k) && v !== null && typeof v !== "boolean" ? "(set)" : redact(v, depth + 1)]),
    );
  };
  const detail = redact(body) as Record<string, unknown>;
  const text = JSON.stringify(detail);
  return text.length <= DETAIL_MAX ? detail : { truncated: text.slice(0, DETAIL_MAX) };
}

export async function writeAudit(
  db: Executor,
  entry: { actor: Actor; action: string; targetType: string; targetId: string; detail: Record<string, unknown>; at: Date },
) {
  await db.insert(auditLog).values({
    actorUserId: entry.actor.userId,
    actor: entry.actor.label,
    action: entry.action,
    targetType: entry.targetType,
    targetId: entry.targetId,
    detail: entry.detail,
    ip: entry.actor.ip,
    createdAt: entry.at,
  });
}

/** A page of the log, newest first: `before` is the id the previous page ended at (keyset paging, bounded at 200). */
export async function listAudit(db: Executor, limit: number, before?: number) {
  const rows = await db
    .select()
    .from(auditLog)
    .where(before === undefined ? undefined : lt(auditLog.id, before))
    .orderBy(desc(auditLog.id))
    .limit(Math.min(limit, 200));
  const [counted] = await db.select({ n: sql<number>`count(*)::int` }).from(auditLog);
  return { rows, total: counted?.n ?? 0 };
}
