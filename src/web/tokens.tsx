/**
 * API tokens: create a permanent token (shown once), list and revoke tokens (never their secret), issue a batch
 * of temporary upload tokens (shown once), as POST /api/v1/images/tokens does.
 */
import { z } from "@hono/zod-openapi";
import type { Context, Hono } from "hono";
import { findTokenWithOwner, listActiveTokensForOwner } from "../db/repositories/tokens.ts";
import { AppError, notFound } from "../errors.ts";
import { formatUtc } from "../http/time.ts";
import { fieldErrors } from "../http/validation.ts";
import { TemporaryTokenRequest } from "../http/schemas.ts";
import { issueAccountTemporaryTokens, issuePermanentToken, revokeOwnToken } from "../services/tokens.ts";
import { UtcTime } from "./account.tsx";
import { formField, readForm } from "./form.ts";
import { CopyButton, Field, FieldError, FormToken, Layout, Notice, SecretValue } from "./components/index.ts";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";
import { servicesOf } from "../services/index.ts";

const MAX_LABEL = 100;
const Label = z
  .string()
  .trim()
  .max(MAX_LABEL, `Use at most ${MAX_LABEL} characters.`)
  .refine((s) => !/\p{Cc}/u.test(s), "Use no control characters.");

type Listed = Awaited<ReturnType<typeof listActiveTokensForOwner>>["rows"][number];

/** Tokens listed per page of the API Tokens page. */
const TOKENS_PER_PAGE = 50;

interface Listing {
  tokens: Listed[];
  page: number;
  lastPage: number;
  total: number;
}

interface Shown {
  /** A permanent token just created: its full value, this once. */
  created?: { id: number; token: string; label: string | null };
  /** Temporary tokens just issued, this once. */
  temporary?: { token: string; expiredAt: Date }[];
  notice?: string;
  /** A refusal of the whole form (a bound reached). */
  refusal?: string;
  errors?: Partial<Record<"label" | "num" | "seconds", string>>;
  values?: { label?: string; num?: string; seconds?: string };
}

/**
 * How a token is named on the page and in the revoke confirmations: its label and id, or, without a label,
 * "Token #<id>, created <date>" (UTC) so that tokens without one can be told apart.
 */
function tokenName(t: { id: number; label: string | null; createdAt: Date }): string {
  return t.label ? `“${t.label}” (#${t.id})` : `Token #${t.id}, created ${formatUtc(t.createdAt)}`;
}

function TokenRow({ t, signedIn }: { t: Listed; signedIn: SignedIn }) {
  const name = tokenName(t);
  return (
    <tr>
      <td data-label="Label">
        {t.label ? (
          <>
            {t.label} <span class="muted">#{t.id}</span>
          </>
        ) : (
          <span class="unlabelled">
            Token #{t.id}, created <UtcTime at={t.createdAt} />
          </span>
        )}
      </td>
      <td data-label="Kind">
        {t.kind === "permanent" ? (
          "permanent"
        ) : (
          <>
            upload only, until <UtcTime at={t.expiredAt!} />
          </>
        )}
      </td>
      <td data-label="Created">
        <UtcTime at={t.createdAt} />
      </td>
      <td data-label="Last used">{t.lastUsedAt ? <UtcTime at={t.lastUsedAt} /> : "never"}</td>
      <td>
        <form method="post" action={`${BASE}/tokens/${t.id}/revoke`} data-confirm={`Revoke ${name}? Uploaders using it will get 401.`}>
          <FormToken signedIn={signedIn} />
          <input type="hidden" name="confirmed" value="0" />
          <button type="submit" class="danger small" aria-label={`Revoke ${name}`}>
            Revoke
          </button>
        </form>
      </td>
    </tr>
  );
}

function TokensPage({ signedIn, listing, shown }: { signedIn: SignedIn; listing: Listing; shown: Shown }) {
  const { created, temporary, notice, refusal, errors = {}, values = {} } = shown;
  const { tokens, page, lastPage, total } = listing;
  const described = (name: keyof typeof errors, hint?: string) =>
    errors[name] ? { "aria-invalid": "true", "aria-describedby": `${name}-error` } : hint ? { "aria-describedby": hint } : {};
  return (
    <Layout title="API tokens" signedIn={signedIn} active="tokens">
      {notice && <Notice kind="success">{notice}</Notice>}
      {refusal && <Notice kind="error">{refusal}</Notice>}
      {created && (
        <section class="card secret" aria-labelledby="created-title">
          <h2 id="created-title">Your new token{created.label ? `: ${created.label}` : ""}</h2>
          <Notice kind="info">Copy it now: it is shown only this once. Only its hash is kept.</Notice>
          <SecretValue id="new-token" label="New token" value={created.token} name="token" />
          <p class="muted small">
            Use it as <code>Authorization: Bearer &lt;token&gt;</code>, in the <code>id|token</code> form shown or the part after the bar alone.
          </p>
        </section>
      )}
      {temporary && (
        <section class="card secret" aria-labelledby="temporary-title">
          <h2 id="temporary-title">Your new upload tokens</h2>
          <Notice kind="info">Copy them now: they are shown only this once. They work for uploads only, until they expire.</Notice>
          <ul class="plain" data-testid="temporary-tokens">
            {temporary.map((t) => (
              <li class="secret-value">
                <code>{t.token}</code>{" "}
                <span class="muted small">
                  until <UtcTime at={t.expiredAt} />
                </span>
                <CopyButton text={t.token} label="Copy" name="upload token" />
              </li>
            ))}
          </ul>
          {temporary.length > 1 && <CopyButton text={temporary.map((t) => t.token).join("\n")} label="Copy all" name="all upload tokens" />}
        </section>
      )}
      <section class="card" aria-labelledby="create-title">
        <h2 id="create-title">Create a permanent token</h2>
        <p class="muted">For an uploader (PicGo, ShareX, uPic, a script): it can upload, list and delete your images and read your profile.</p>
        <form method="post" action={`${BASE}/tokens`} class="row">
          <FormToken signedIn={signedIn} />
          <Field label="Label (optional)" id="label" hint="What uses it, e.g. “laptop ShareX”">
            <input id="label" name="label" type="text" maxlength={MAX_LABEL} value={values.label ?? ""} {...described("label", "label-hint")} />
            <FieldError id="label" error={errors.label} />
          </Field>
          <button type="submit" class="primary">
            Create token
          </button>
        </form>
      </section>
      <section class="card" aria-labelledby="list-title">
        <h2 id="list-title">Your tokens</h2>
        {tokens.length === 0 ? (
          <p class="muted">
            {total === 0 ? (
              "No tokens yet."
            ) : (
              <>
                No tokens on this page. <a href={`${BASE}/tokens`}>Back to the first page</a>.
              </>
            )}
          </p>
        ) : (
          <div class="table-wrap">
            <table class="stack">
              <thead>
                <tr>
                  <th scope="col">Label</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {tokens.map((t) => (
                  <TokenRow t={t} signedIn={signedIn} />
                ))}
              </tbody>
            </table>
          </div>
        )}
        {lastPage > 1 && (
          <nav class="pages" aria-label="Pages of tokens">
            {page > 1 ? (
              <a href={`${BASE}/tokens?page=${page - 1}`} rel="prev">
                ← Newer
              </a>
            ) : (
              <span></span>
            )}
            <span>
              Page {page} of {lastPage} ({total} tokens)
            </span>
            {page < lastPage ? (
              <a href={`${BASE}/tokens?page=${page + 1}`} rel="next">
                Older →
              </a>
            ) : (
              <span></span>
            )}
          </nav>
        )}
        <p class="muted small">Revoking a permanent token also revokes the upload tokens it issued through the API.</p>
      </section>
      <section class="card" aria-labelledby="temporary-form-title">
        <h2 id="temporary-form-title">Issue temporary upload tokens</h2>
        <p class="muted">Upload-only tokens for a web page or a CI job: they cannot list or delete anything.</p>
        <form method="post" action={`${BASE}/tokens/temporary`} class="row">
          <FormToken signedIn={signedIn} />
          <Field label="How many" id="num" hint="1–100">
            <input id="num" name="num" type="number" min={1} max={100} required value={values.num ?? "1"} {...described("num", "num-hint")} />
            <FieldError id="num" error={errors.num} />
          </Field>
          <Field label="Valid for (seconds)" id="seconds" hint="1–2626560 (about 30 days); 3600 = one hour">
            <input
              id="seconds"
              name="seconds"
              type="number"
              min={1}
              max={2626560}
              required
              value={values.seconds ?? "3600"}
              {...described("seconds", "seconds-hint")}
            />
            <FieldError id="seconds" error={errors.seconds} />
          </Field>
          <button type="submit">Issue tokens</button>
        </form>
      </section>
    </Layout>
  );
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
  web.get("/tokens", requireSession, (c) => render(c, { notice: c.req.query("revoked") !== undefined ? "Token revoked." : undefined }));

  web.post("/tokens", requireSession, async (c) => {
    const { db, clock } = c.get("deps");
    const raw = formField(await readForm(c), "label");
    const label = Label.safeParse(raw);
    if (!label.success) return render(c, { errors: { label: label.error.issues[0]!.message }, values: { label: raw } }, 422);
    let issued;
    try {
      issued = await issuePermanentToken(db, c.get("signedIn").user.id, clock(), label.data || null);
    } catch (e) {
      return refused(c, e, { label: raw });
    }
    return render(c, { created: { ...issued, label: label.data || null } });
  });

  web.post("/tokens/temporary", requireSession, async (c) => {
    const { db, clock } = c.get("deps");
    const body = await readForm(c);
    const values = { num: formField(body, "num"), seconds: formField(body, "seconds") };
    const parsed = TemporaryTokenRequest.safeParse(values);
    if (!parsed.success) {
      const errors = Object.fromEntries(Object.entries(fieldErrors(parsed.error)).map(([k, v]) => [k, v[0]!]));
      return render(c, { errors, values }, 422);
    }
    let issued;
    try {
      issued = await issueAccountTemporaryTokens(db, c.get("signedIn").user.id, parsed.data.num, parsed.data.seconds, clock());
    } catch (e) {
      return refused(c, e, values);
    }
    return render(c, { temporary: issued.map((t) => ({ token: t.token, expiredAt: t.expiredAt })) });
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
      if (!token || token.userId !== signedIn.user.id || token.revokedAt !== null) throw notFound("Token not found.");
      c.header("Cache-Control", "no-store");
      return c.html(
        <Layout title="Revoke a token" signedIn={signedIn} active="tokens">
          <form class="card narrow" method="post" action={`${BASE}/tokens/${id}/revoke`}>
            <p>
              Revoke <strong data-testid="token-name">{tokenName(token)}</strong>? Uploaders using it will get 401.
            </p>
            <FormToken signedIn={signedIn} />
            <input type="hidden" name="confirmed" value="1" />
            <div class="buttons">
              <button type="submit" class="danger">
                Revoke
              </button>
              <a class="button" href={`${BASE}/tokens`}>
                Cancel
              </a>
            </div>
          </form>
        </Layout>,
      );
    }
    if (!(valid && (await revokeOwnToken(deps.db, id, signedIn.user.id, deps.clock())))) {
      throw notFound("Token not found.");
    }
    // this instance refuses it at once; the others within the lookup cache's bound (1 s)
    servicesOf(deps).lookups.forget("token:");
    return c.redirect(`${BASE}/tokens?revoked`, 303);
  });
}
