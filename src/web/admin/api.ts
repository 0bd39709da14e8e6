/**
 * The admin pages change nothing themselves: every change is a call of the admin API, in-process, so that it meets the
 * same validation, the same messages and the same audit log as ADMIN_TOKEN's calls: an administrator is never a way
 * around the v1 rules. The call carries the administrator as an explicit internal caller (http/internal-call.ts): it is
 * not throttled as an address, and the audit log shows the administrator's own address.
 */
import type { Context } from "hono";
import { clientIp } from "../../http/auth.ts";
import { internalCall } from "../../http/internal-call.ts";
import type { SignedInEnv } from "../session.ts";

// biome-ignore lint/suspicious/noExplicitAny: the admin pages read the answer's data as the API documents it, unchecked
export interface ApiAnswer<T = any> {
  status: number;
  ok: boolean;
  message: string;
  data: T;
  /** Field errors of a 422, by field name. */
  errors: Record<string, string[]>;
}

// biome-ignore lint/suspicious/noExplicitAny: as ApiAnswer
export async function adminApi<T = any>(c: Context<SignedInEnv>, method: string, path: string, body?: unknown): Promise<ApiAnswer<T>> {
  const { user } = c.get("signedIn");
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  const actor = internalCall({ userId: user.id, label: `${user.username} (user ${user.id})`, ip: clientIp(c) });
  const res = await c.get("callApp")(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }, actor);
  const json = (await res.json().catch(() => null)) as { status?: boolean; message?: string; data?: T; errors?: Record<string, string[]> } | null;
  return {
    status: res.status,
    ok: res.ok && json?.status === true,
    message: json?.message ?? res.statusText,
    data: json?.data as T,
    errors: json?.errors ?? {},
  };
}

/** The first error of each field of a 422, or the message for the whole form. */
export function formErrors(answer: ApiAnswer): { fields: Record<string, string>; form?: string } {
  const fields = Object.fromEntries(Object.entries(answer.errors).map(([k, v]) => [k, v[0] ?? "Invalid."]));
  return { fields, form: Object.keys(fields).length ? undefined : answer.message };
}
