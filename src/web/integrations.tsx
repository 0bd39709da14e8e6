/**
 * Integrations: ready-made settings for uploaders (ShareX, PicGo, PicList, uPic, curl, a shell script
 * for screenshot tools), all sending POST /api/v1/upload with `Authorization: Bearer <token>`. The settings are built
 * in integrations/configs.ts, the page in integrations/page.tsx.
 *
 * A token's value is never kept (only its hash), so the settings either hold a placeholder the user replaces with a
 * token they already have, or a permanent token made on the spot for them (POST /user/integrations: the same
 * service and bounds as the API tokens page, shown this once, the page not stored). Options (storage, album,
 * permission) come from the query (GET) or the form (POST) and are checked against what this account may use.
 *
 *   GET  /user/integrations                      the settings with the placeholder
 *   POST /user/integrations                      a new permanent token, and the settings with it
 *   GET  /user/integrations/download/:file       sharex (<host>.sxcu) or script (<host>-upload.sh), placeholder
 *   POST /user/integrations/download/:file       the same with the token of the form (the page just made it)
 */
import type { Context, Hono } from "hono";
import { listAlbumsForOwner } from "../db/repositories/sessions.ts";
import { listUsableStrategies } from "../db/repositories/strategies.ts";
import { listActiveTokensForOwner } from "../db/repositories/tokens.ts";
import { AppError, notFound, validationError } from "../errors.ts";
import { formatDateTime } from "../http/time.ts";
import { issuePermanentToken } from "../services/tokens.ts";
import { formField, readForm } from "./form.ts";
import { t } from "./i18n/index.ts";
import { type DownloadName, downloads, type Options, type Settings, TOKEN_PLACEHOLDER } from "./integrations/configs.ts";
import { type Choices, IntegrationsPage, type Shown } from "./integrations/page.tsx";
import { requireSession, type SignedInEnv, type WebEnv } from "./session.ts";

/** Albums offered in the options at most. */
const ALBUMS_LISTED = 500;
/** The account's tokens named on the page (labels only: their values are not kept). */
const TOKENS_NAMED = 10;
/** A token sent back to the download form: the characters of `id|raw` (base64url) or a raw token alone. */
const TOKEN_SHAPE = /^[A-Za-z0-9_\-|]{1,200}$/;

// ---- requests ------------------------------------------------------------------------------------------------

const idOf = (value: string | undefined) => (value !== undefined && /^\d{1,10}$/.test(value) && Number(value) >= 1 ? Number(value) : null);

async function choicesFor(c: Context<SignedInEnv>): Promise<Choices> {
  const { db, clock } = c.get("deps");
  const { user, group } = c.get("signedIn");
  const [strategies, albums, tokens] = await Promise.all([
    listUsableStrategies(db, group.id),
    listAlbumsForOwner(db, user.id, ALBUMS_LISTED),
    listActiveTokensForOwner(db, user.id, clock(), 100, 0),
  ]);
  return {
    strategies: strategies.map((x) => ({ id: x.id, name: x.name })),
    albums,
    tokens: tokens.rows.filter((t) => t.kind === "permanent").slice(0, TOKENS_NAMED),
  };
}

/** The options asked for, kept only where this account may use them (anything else: the default). */
function optionsFrom(get: (name: string) => string | undefined, choices: Choices): Options {
  const strategyId = idOf(get("strategy_id"));
  const albumId = idOf(get("album_id"));
  return {
    strategyId: strategyId !== null && choices.strategies.some((x) => x.id === strategyId) ? strategyId : null,
    albumId: albumId !== null && choices.albums.some((a) => a.id === albumId) ? albumId : null,
    permission: get("permission") === "0" ? 0 : 1,
  };
}

function settingsFor(c: Context<SignedInEnv>, options: Options, token = TOKEN_PLACEHOLDER): Settings {
  const base = c.get("deps").config.baseUrl.replace(/\/+$/, "");
  return { base, host: new URL(base).hostname, token, options };
}

function render(c: Context<SignedInEnv>, settings: Settings, choices: Choices, shown: Shown = {}, status: 200 | 400 | 429 = 200) {
  c.header("Cache-Control", "no-store");
  return c.html(<IntegrationsPage signedIn={c.get("signedIn")} settings={settings} choices={choices} shown={shown} />, status);
}

const downloadName = (value: string): DownloadName => {
  if (value === "sharex" || value === "script") return value;
  throw notFound(t("integrations.error.noFile"));
};

function download(c: Context<SignedInEnv>, file: DownloadName, settings: Settings) {
  const { name, type, body } = downloads[file](settings);
  return c.body(body, 200, {
    "content-type": type,
    "content-disposition": `attachment; filename="${name}"`,
    "cache-control": "no-store",
  });
}

export function register(web: Hono<WebEnv>) {
  web.get("/integrations", requireSession, async (c) => {
    const choices = await choicesFor(c);
    return render(
      c,
      settingsFor(
        c,
        optionsFrom((n) => c.req.query(n), choices),
      ),
      choices,
    );
  });

  web.post("/integrations", requireSession, async (c) => {
    const { db, clock } = c.get("deps");
    const form = await readForm(c);
    const choices = await choicesFor(c);
    const options = optionsFrom((n) => form[n], choices);
    const now = clock();
    const label = t("integrations.token.label", { date: formatDateTime(now) });
    let issued;
    try {
      issued = await issuePermanentToken(db, c.get("signedIn").user.id, now, label);
    } catch (e) {
      // the account's bounds (as on the API tokens page): the page says so
      if (!(e instanceof AppError) || (e.status !== 400 && e.status !== 429)) throw e;
      const retry = e.headers?.["retry-after"];
      if (retry) c.header("Retry-After", retry);
      return render(c, settingsFor(c, options), choices, { refusal: e.message }, e.status);
    }
    return render(c, settingsFor(c, options, issued.token), await choicesFor(c), { created: { token: issued.token, label } });
  });

  web.get("/integrations/download/:file", requireSession, async (c) => {
    const file = downloadName(c.req.param("file"));
    const choices = await choicesFor(c);
    return download(
      c,
      file,
      settingsFor(
        c,
        optionsFrom((n) => c.req.query(n), choices),
      ),
    );
  });

  web.post("/integrations/download/:file", requireSession, async (c) => {
    const file = downloadName(c.req.param("file"));
    const form = await readForm(c);
    const token = formField(form, "token");
    if (token !== "" && !TOKEN_SHAPE.test(token)) throw validationError({ token: [t("integrations.error.token")] });
    const choices = await choicesFor(c);
    return download(
      c,
      file,
      settingsFor(
        c,
        optionsFrom((n) => form[n], choices),
        token || TOKEN_PLACEHOLDER,
      ),
    );
  });
}
