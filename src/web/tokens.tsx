/**
 * API tokens: create a permanent token (shown once), list and revoke tokens (never their secret), issue a batch
 * of temporary upload tokens (shown once), as POST /api/v1/images/tokens does. The page is in tokens/page.tsx.
 */
import type { Context, Hono } from "hono";
import { findTokenWithOwner, listActiveTokensForOwner } from "../db/repositories/tokens.ts";
import { AppError, notFound } from "../errors.ts";
import { TemporaryTokenRequest } from "../http/schemas.ts";
import { servicesOf } from "../services/index.ts";
import { issueAccountTemporaryTokens, issuePermanentToken, revokeOwnToken } from "../services/tokens.ts";
import { ConfirmPage, durationOf } from "./components/index.ts";
import { formField, type FormFields, readForm } from "./form.ts";
import { rich, t } from "./i18n/index.ts";
import { BASE, requireSession, type SignedInEnv, type WebEnv } from "./session.ts";
import { LIFETIME_DAYS, MAX_LABEL, NUM_MAX, NUM_MIN, type Shown, tokenName, TokensPage } from "./tokens/page.tsx";

/** Tokens listed per page of the API Tokens page. */
const TOKENS_PER_PAGE = 50;

/** The label's error, or null when it is a label (trimmed, at most MAX_LABEL characters, no control characters). */
function labelError(label: string): string | null {
  if (label.length > MAX_LABEL) return t("tokens.error.labelLong", { max: MAX_LABEL });
  if (/\p{Cc}/u.test(label)) return t("tokens.error.labelControl");
  return null;
}

/**
 * The lifetime the form asks for, in seconds as the API takes it: the lifetime field's preset or custom amount, or a
 * `seconds` field as the API names it (a script posting the form). Text that is no duration is passed on as typed,
 * for the API's schema to refuse.
 */
function secondsOf(form: FormFields): number | string | null {
  if (form.seconds_preset !== undefined) return durationOf(form, "seconds");
  return formField(form, "seconds");
}

/** The page number of the query: from 1, anything else is the first page. */
const pageOf = (value: string | undefined) => (value !== undefined && /^\d{1,7}$/.test(value) && Number(value) >= 1 ? Number(value) : 1);

/** Pages that show a secret must not be kept by the browser or a proxy. */
async function render(c: Context<SignedInEnv>, shown: Shown = {}, status: 200 | 400 | 404 | 422 | 429 = 200) {
  const signedIn = c.get("signedIn");
  const deps = c.get("deps");
  const page = pageOf(c.req.query("page"));
  const { rows, total } = await listActiveTokensForOwner(deps.db, signedIn.user.id, deps.clock(), TOKENS_PER_PAGE, (page - 1) * TOKENS_PER_PAGE);
  const listing = { tokens: rows, page, total, lastPage: Math.max(1, Math.ceil(total / TOKENS_PER_PAGE)) };
  c.header("Cache-Control", "no-store");
  return c.html(<TokensPage signedIn={signedIn} listing={listing} shown={shown} />, status);
}

/** A bound of the account's tokens refused the form (400: too many live tokens; 429: issuing too fast): the page says so. */
async function refused(c: Context<SignedInEnv>, e: unknown, values: Shown["values"]) {
  if (!(e instanceof AppError) || (e.status !== 400 && e.status !== 429)) throw e;
  const retry = e.headers?.["retry-after"];
  if (retry) c.header("Retry-After", retry);
  return render(c, { refusal: e.message, values }, e.status);
}

export function register(web: Hono<WebEnv>) {
  web.get("/tokens", requireSession, (c) => render(c, { notice: c.req.query("revoked") !== undefined ? t("tokens.revoked") : undefined }));

  web.post("/tokens", requireSession, async (c) => {
    const { db, clock } = c.get("deps");
    const raw = formField(await readForm(c), "label");
    const label = raw.trim();
    const error = labelError(label);
    if (error) return render(c, { errors: { label: error }, values: { label: raw } }, 422);
    let issued;
    try {
      issued = await issuePermanentToken(db, c.get("signedIn").user.id, clock(), label || null);
    } catch (e) {
      return refused(c, e, { label: raw });
    }
    return render(c, { created: { ...issued, label: label || null } });
  });

  web.post("/tokens/temporary", requireSession, async (c) => {
    const { db, clock } = c.get("deps");
    const body = await readForm(c);
    const num = formField(body, "num");
    const seconds = secondsOf(body);
    const values = { num, seconds: typeof seconds === "number" ? seconds : /^\d{1,10}$/.test(seconds ?? "") ? Number(seconds) : null };
    const parsed = TemporaryTokenRequest.safeParse({ num, seconds: seconds === null ? "" : String(seconds) });
    if (!parsed.success) {
      const fields = new Set(parsed.error.issues.map((i) => String(i.path[0])));
      const errors: Shown["errors"] = {};
      if (fields.has("num")) errors.num = t("tokens.error.num", { min: NUM_MIN, max: NUM_MAX });
      if (fields.has("seconds")) errors.seconds = t("tokens.error.seconds", { days: LIFETIME_DAYS });
      return render(c, { errors, values }, 422);
    }
    let issued;
    try {
      issued = await issueAccountTemporaryTokens(db, c.get("signedIn").user.id, parsed.data.num, parsed.data.seconds, clock());
    } catch (e) {
      return refused(c, e, values);
    }
    return render(c, { temporary: issued.map((x) => ({ token: x.token, expiredAt: x.expiredAt })), values: { num, seconds: parsed.data.seconds } });
  });

  // confirmed (the page's script asks first, or the page below without scripts), the token is revoked
  web.post("/tokens/:id/revoke", requireSession, async (c) => {
    const deps = c.get("deps");
    const signedIn = c.get("signedIn");
    const id = /^\d{1,10}$/.test(c.req.param("id")) ? Number(c.req.param("id")) : 0;
    const valid = id > 0 && id <= 2_147_483_647;
    if (valid && formField(await readForm(c), "confirmed") !== "1") {
      const found = await findTokenWithOwner(deps.db, { id });
      const token = found?.token;
      if (!token || token.userId !== signedIn.user.id || token.revokedAt !== null) throw notFound(t("tokens.revoke.notFound"));
      c.header("Cache-Control", "no-store");
      return c.html(
        <ConfirmPage
          title={t("tokens.revoke.title")}
          signedIn={signedIn}
          active="tokens"
          action={`${BASE}/tokens/${id}/revoke`}
          confirmLabel={t("tokens.revoke.button")}
          cancel={`${BASE}/tokens`}
        >
          <p>{rich("tokens.revoke.ask", { name: tokenName(token), b: (chunks) => <strong data-testid="token-name">{chunks}</strong> })}</p>
        </ConfirmPage>,
      );
    }
    if (!(valid && (await revokeOwnToken(deps.db, id, signedIn.user.id, deps.clock())))) {
      throw notFound(t("tokens.revoke.notFound"));
    }
    // this instance refuses it at once; the others within the lookup cache's bound (1 s)
    servicesOf(deps).lookups.forget("token:");
    return c.redirect(`${BASE}/tokens?revoked`, 303);
  });
}
