/**
 * Integrations: ready-made settings for uploaders (ShareX, PicGo, PicList, uPic, curl, a shell script
 * for screenshot tools), all sending POST /api/v1/upload with `Authorization: Bearer <token>`.
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
import { CopyButton, Field, FormToken, Layout, Notice, SecretValue } from "./components/index.ts";
import { BASE, requireSession, type SignedIn, type SignedInEnv, type WebEnv } from "./session.ts";

/** What the settings hold where the user's token goes, when the page did not just make one. */
const TOKEN_PLACEHOLDER = "PASTE-YOUR-TOKEN-HERE";
/** The ShareX version the .sxcu file declares: its `{json:…}` syntax (ShareX 14+) is used as is. */
const SHAREX_VERSION = "15.0.0";
/** Albums offered in the options at most. */
const ALBUMS_LISTED = 500;
/** The account's tokens named on the page (labels only: their values are not kept). */
const TOKENS_NAMED = 10;
/** A token sent back to the download form: the characters of `id|raw` (base64url) or a raw token alone. */
const TOKEN_SHAPE = /^[A-Za-z0-9_\-|]{1,200}$/;

export interface Options {
  strategyId: number | null;
  albumId: number | null;
  /** 1 public (the service's default), 0 private. */
  permission: 0 | 1;
}

export interface Settings {
  /** BASE_URL without a trailing slash. */
  base: string;
  /** BASE_URL's host name, for file names. */
  host: string;
  token: string;
  options: Options;
}

// ---- the settings, one builder per uploader ------------------------------------------------------------------

const uploadUrl = (s: Settings) => `${s.base}/api/v1/upload`;

/** The form fields beyond the file: the options that differ from the service's defaults. */
function extraFields(o: Options): [string, string][] {
  const fields: [string, string][] = [];
  if (o.strategyId !== null) fields.push(["strategy_id", String(o.strategyId)]);
  if (o.albumId !== null) fields.push(["album_id", String(o.albumId)]);
  if (o.permission === 0) fields.push(["permission", "0"]);
  return fields;
}

/** A word for a POSIX shell, single-quoted. */
const shQuote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/** ShareX's custom uploader (https://getsharex.com/docs/custom-uploader), as its "Export" writes a .sxcu file. */
function sharexUploader(s: Settings) {
  const fields = extraFields(s.options);
  return {
    Version: SHAREX_VERSION,
    Name: s.host,
    DestinationType: "ImageUploader",
    RequestMethod: "POST",
    RequestURL: uploadUrl(s),
    Headers: { Authorization: `Bearer ${s.token}` },
    Body: "MultipartFormData",
    ...(fields.length > 0 ? { Arguments: Object.fromEntries(fields) } : {}),
    FileFormName: "file",
    URL: "{json:data.links.url}",
    ThumbnailURL: "{json:data.links.thumbnail_url}",
    ErrorMessage: "{json:message}",
  };
}

/** PicGo's `picBed` section for picgo-plugin-lankong (its "V2" is Lsky Pro 2's API, /api/v1, which this one is). */
function picgoConfig(s: Settings) {
  return {
    picBed: {
      uploader: "lankong",
      current: "lankong",
      lankong: {
        lskyProVersion: "V2",
        server: s.base,
        token: `Bearer ${s.token}`,
        strategyId: s.options.strategyId === null ? "" : String(s.options.strategyId),
        albumId: s.options.albumId === null ? "" : String(s.options.albumId),
        permission: s.options.permission,
        ignoreCertErr: false,
        syncDelete: false,
      },
    },
    picgoPlugins: { "picgo-plugin-lankong": true },
  };
}

/** PicList's `picBed` section for its built-in Lsky Pro uploader (lskyplist, a port of the same plugin). */
function piclistConfig(s: Settings) {
  return {
    picBed: {
      uploader: "lskyplist",
      current: "lskyplist",
      lskyplist: {
        version: "V2",
        host: s.base,
        token: `Bearer ${s.token}`,
        strategyId: s.options.strategyId === null ? "" : String(s.options.strategyId),
        albumId: s.options.albumId === null ? "" : String(s.options.albumId),
        permission: s.options.permission,
      },
    },
  };
}

/** uPic's custom host, field by field as its preferences name them. */
function upicHost(s: Settings) {
  return {
    url: uploadUrl(s),
    method: "POST",
    field: "file",
    headers: [{ key: "Authorization", value: `Bearer ${s.token}` }],
    bodys: extraFields(s.options).map(([key, value]) => ({ key, value })),
    resultPath: '["data","links","url"]',
    domain: "",
  };
}

/** One line; `screenshot.png` is the file to send. */
function curlCommand(s: Settings) {
  const fields = extraFields(s.options)
    .map(([k, v]) => ` -F ${shQuote(`${k}=${v}`)}`)
    .join("");
  return `curl -sS -H ${shQuote(`Authorization: Bearer ${s.token}`)} -H 'Accept: application/json'${fields} -F 'file=@screenshot.png' ${shQuote(uploadUrl(s))}`;
}

/** A script for screenshot tools: the image on standard input or as a file; prints the URL and copies it. */
export function uploadScript(s: Settings) {
  const fields = extraFields(s.options)
    .map(([k, v]) => ` -F ${shQuote(`${k}=${v}`)}`)
    .join("");
  const name = `${s.host}-upload.sh`;
  return `#!/usr/bin/env bash
# Uploads an image to ${s.host} and prints its address; with wl-copy (Wayland) or xclip (X11)
# the address is also copied to the clipboard.
#   flameshot gui --raw | ./${name}     the image on standard input
#   ./${name} screenshot.png            an image file
# Needs curl, and jq or python3 to read the answer. IMAGE_HOST_TOKEN, when set, is the token used.
set -euo pipefail

api=${shQuote(uploadUrl(s))}
token="\${IMAGE_HOST_TOKEN:-${s.token}}"

fail() { printf 'upload failed: %s\\n' "$*" >&2; exit 1; }

command -v curl >/dev/null || fail "curl is not installed"
if command -v jq >/dev/null; then
  field() { jq -r "$1 // empty" 2>/dev/null || true; }
elif command -v python3 >/dev/null; then
  field() { python3 -c 'import json, sys
try:
    v = json.load(sys.stdin)
    for k in sys.argv[1].lstrip(".").split("."): v = v[k]
    print("" if v is None else v)
except Exception:
    pass' "$1"; }
else
  fail "install jq or python3 to read the answer"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ $# -gt 0 ]; then
  file=$1
  [ -f "$file" ] || fail "no such file: $file"
else
  [ -t 0 ] && fail "give an image file, or pipe one in: flameshot gui --raw | $0"
  file="$tmp/screenshot.png"
  cat >"$file"
  [ -s "$file" ] || fail "nothing arrived on standard input (was the capture cancelled?)"
fi

code=$(curl -sS -o "$tmp/answer" -w '%{http_code}' -H "Authorization: Bearer $token" -H 'Accept: application/json'${fields} -F "file=@$file" "$api") ||
  fail "could not reach $api"
url=$(field .data.links.url <"$tmp/answer")
if [ "$code" != 200 ] || [ -z "$url" ]; then
  message=$(field .message <"$tmp/answer")
  fail "HTTP $code: \${message:-$(head -c 300 "$tmp/answer")}"
fi
printf '%s\\n' "$url"
if [ -n "\${WAYLAND_DISPLAY:-}" ] && command -v wl-copy >/dev/null; then
  printf '%s' "$url" | wl-copy
elif [ -n "\${DISPLAY:-}" ] && command -v xclip >/dev/null; then
  printf '%s' "$url" | xclip -selection clipboard
fi
`;
}

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** The downloadable files. */
const downloads = {
  sharex: (s: Settings) => ({ name: `${s.host}.sxcu`, type: "application/json; charset=utf-8", body: json(sharexUploader(s)) }),
  script: (s: Settings) => ({ name: `${s.host}-upload.sh`, type: "text/x-shellscript; charset=utf-8", body: uploadScript(s) }),
};
type DownloadName = keyof typeof downloads;

// ---- the page -------------------------------------------------------------------------------------------------

interface Choices {
  strategies: { id: number; name: string }[];
  albums: { id: number; name: string }[];
  tokens: { id: number; label: string | null; createdAt: Date }[];
}

interface Shown {
  created?: { token: string; label: string };
  refusal?: string;
}

/** A block of settings with its copy button; `id` is the element the tests and the label point at. */
function Config({ id, label, text }: { id: string; label: string; text: string }) {
  return (
    <div class="config">
      <pre id={id} role="region" tabindex={0} aria-label={label}>
        <code>{text}</code>
      </pre>
      <CopyButton text={text} label={`Copy ${label}`} name={label} />
    </div>
  );
}

/** The hidden fields that carry the options (and, on a download, the token) into a form. */
function OptionFields({ options, token }: { options: Options; token?: string }) {
  return (
    <>
      {options.strategyId !== null && <input type="hidden" name="strategy_id" value={String(options.strategyId)} />}
      {options.albumId !== null && <input type="hidden" name="album_id" value={String(options.albumId)} />}
      <input type="hidden" name="permission" value={String(options.permission)} />
      {token !== undefined && <input type="hidden" name="token" value={token} />}
    </>
  );
}

const query = (o: Options) => {
  const q = new URLSearchParams();
  if (o.strategyId !== null) q.set("strategy_id", String(o.strategyId));
  if (o.albumId !== null) q.set("album_id", String(o.albumId));
  q.set("permission", String(o.permission));
  return q.toString();
};

function Download({
  file,
  settings,
  signedIn,
  withToken,
  label,
}: {
  file: DownloadName;
  settings: Settings;
  signedIn: SignedIn;
  withToken: boolean;
  label: string;
}) {
  const action = `${BASE}/integrations/download/${file}`;
  if (!withToken) {
    return (
      <a class="button" href={`${action}?${query(settings.options)}`} download={downloads[file](settings).name}>
        {label}
      </a>
    );
  }
  return (
    <form method="post" action={action} class="inline">
      <FormToken signedIn={signedIn} />
      <OptionFields options={settings.options} token={settings.token} />
      <button type="submit">{label}</button>
    </form>
  );
}

function IntegrationsPage({ signedIn, settings, choices, shown }: { signedIn: SignedIn; settings: Settings; choices: Choices; shown: Shown }) {
  const { created, refusal } = shown;
  const o = settings.options;
  const withToken = created !== undefined;
  const picgo = picgoConfig(settings).picBed.lankong;
  const piclist = piclistConfig(settings).picBed.lskyplist;
  const upic = upicHost(settings);
  const strategyName = o.strategyId === null ? "automatic" : (choices.strategies.find((x) => x.id === o.strategyId)?.name ?? String(o.strategyId));
  const tokenWord = withToken ? "your new token" : <code>{TOKEN_PLACEHOLDER}</code>;
  return (
    <Layout title="Integrations" signedIn={signedIn} active="integrations">
      <p>
        Settings for uploaders that send images to this site: ShareX, PicGo, PicList, uPic, curl and a script for screenshot tools. They all send{" "}
        <code>POST {uploadUrl(settings)}</code> with <code>Authorization: Bearer &lt;token&gt;</code> and the image in the <code>file</code> field.
      </p>
      {refusal && <Notice kind="error">{refusal}</Notice>}
      {created ? (
        <section class="card secret" aria-labelledby="created-title">
          <h2 id="created-title">Your new token: {created.label}</h2>
          <Notice kind="info">The settings below hold this token. Copy them now: it is shown only this once, and only its hash is kept.</Notice>
          <SecretValue id="new-token" label="New token" value={created.token} name="token" />
          <p class="muted small">
            It is listed on the <a href={`${BASE}/tokens`}>API tokens</a> page, where it can be revoked.{" "}
            <a href={`${BASE}/integrations?${query(o)}`}>Show the settings without a token</a>.
          </p>
        </section>
      ) : (
        <section class="card" aria-labelledby="token-title">
          <h2 id="token-title">Which token</h2>
          <p>
            A token's value is shown only when it is made, so these settings hold <code>{TOKEN_PLACEHOLDER}</code> where the token goes: replace it with a token
            you already have, or make a new one for them.
          </p>
          <form method="post" action={`${BASE}/integrations`}>
            <FormToken signedIn={signedIn} />
            <OptionFields options={o} />
            <button type="submit" class="primary">
              Make a new token for these settings
            </button>
          </form>
          <p class="muted small">
            The new token is permanent, labelled “Integrations” with today's date, and counts towards your tokens like one made on the{" "}
            <a href={`${BASE}/tokens`}>API tokens</a> page.
          </p>
          {choices.tokens.length > 0 && (
            <>
              <h3 id="yours-title">Your permanent tokens</h3>
              <ul class="plain" aria-labelledby="yours-title" data-testid="your-tokens">
                {choices.tokens.map((t) => (
                  <li>
                    {t.label || `Token ${t.id}`} <span class="muted small">made {formatDateTime(t.createdAt)}</span>
                  </li>
                ))}
              </ul>
            </>
          )}
        </section>
      )}

      <section class="card" aria-labelledby="options-title">
        <h2 id="options-title">Options</h2>
        <form method="get" action={`${BASE}/integrations`} class="row">
          <Field label="Storage" id="strategy_id" hint="Automatic: the first with space left.">
            <select id="strategy_id" name="strategy_id" aria-describedby="strategy_id-hint">
              <option value="">Automatic</option>
              {choices.strategies.map((x) => (
                <option value={String(x.id)} selected={x.id === o.strategyId}>
                  {x.name} (id {x.id})
                </option>
              ))}
            </select>
          </Field>
          <Field label="Album" id="album_id">
            <select id="album_id" name="album_id">
              <option value="">None</option>
              {choices.albums.map((a) => (
                <option value={String(a.id)} selected={a.id === o.albumId}>
                  {a.name} (id {a.id})
                </option>
              ))}
            </select>
          </Field>
          <Field label="Permission" id="permission">
            <select id="permission" name="permission">
              <option value="1" selected={o.permission === 1}>
                Public
              </option>
              <option value="0" selected={o.permission === 0}>
                Private
              </option>
            </select>
          </Field>
          <button type="submit">Apply to the settings</button>
        </form>
        {withToken && <p class="muted small">Applying shows the settings again without the token: it is not shown twice.</p>}
      </section>

      <section class="card" aria-labelledby="sharex-title">
        <h2 id="sharex-title">ShareX (Windows)</h2>
        <p>
          Download the custom uploader and open it (double-click): ShareX adds it and makes it the image uploader. Or copy it and use ShareX's{" "}
          <em>Destinations → Custom uploader settings → Import → From clipboard</em>.
        </p>
        <Download file="sharex" settings={settings} signedIn={signedIn} withToken={withToken} label={`Download ${settings.host}.sxcu`} />
        <Config id="cfg-sharex" label="ShareX custom uploader" text={json(sharexUploader(settings))} />
        <p class="muted small">
          There is no deletion URL: deleting an image here takes <code>DELETE /api/v1/images/&lt;key&gt;</code> with the token, which a ShareX deletion link (a
          plain address opened in a browser) cannot send. Delete images on the <a href={`${BASE}/images`}>Images</a> page.
        </p>
      </section>

      <section class="card" aria-labelledby="picgo-title">
        <h2 id="picgo-title">PicGo</h2>
        <p>
          Install the plugin <code>picgo-plugin-lankong</code> (search “lankong” in PicGo's plugin settings), choose the <em>lankong</em> image host and enter:
        </p>
        <div class="table-wrap">
          <table class="settings" aria-labelledby="picgo-title">
            <thead>
              <tr>
                <th scope="col">Setting</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <th scope="row">Lsky Pro Version</th>
                <td>
                  <code>V2</code> <span class="muted small">(this site's API is Lsky Pro 2's)</span>
                </td>
              </tr>
              <tr>
                <th scope="row">Server</th>
                <td>
                  <code>{picgo.server}</code> <span class="muted small">(no slash at the end)</span>
                </td>
              </tr>
              <tr>
                <th scope="row">Auth token</th>
                <td>
                  <code>{picgo.token}</code> <span class="muted small">(“Bearer”, a space, then the token)</span>
                </td>
              </tr>
              <tr>
                <th scope="row">Strategy ID</th>
                <td>{picgo.strategyId ? <code>{picgo.strategyId}</code> : <span class="muted">empty (automatic)</span>}</td>
              </tr>
              <tr>
                <th scope="row">Album ID</th>
                <td>{picgo.albumId ? <code>{picgo.albumId}</code> : <span class="muted">empty (none)</span>}</td>
              </tr>
              <tr>
                <th scope="row">Permission</th>
                <td>{o.permission === 1 ? "public" : "private"}</td>
              </tr>
              <tr>
                <th scope="row">Ignore certificate error</th>
                <td>off</td>
              </tr>
              <tr>
                <th scope="row">Sync Delete</th>
                <td>off, or on to delete here what you delete from PicGo's album</td>
              </tr>
            </tbody>
          </table>
        </div>
        <p>
          The same as the <code>picBed</code> part of PicGo's configuration file (<code>data.json</code>, or <code>config.json</code> of PicGo-Core):
        </p>
        <Config id="cfg-picgo" label="PicGo configuration" text={json(picgoConfig(settings))} />
      </section>

      <section class="card" aria-labelledby="piclist-title">
        <h2 id="piclist-title">PicList</h2>
        <p>
          PicList has the same uploader built in: choose <em>Lsky Pro</em> (<code>lskyplist</code>) and enter version <code>V2</code>, host{" "}
          <code>{piclist.host}</code>, token <code>{piclist.token}</code>
          {piclist.strategyId && (
            <>
              , strategy ID <code>{piclist.strategyId}</code>
            </>
          )}
          {piclist.albumId && (
            <>
              , album ID <code>{piclist.albumId}</code>
            </>
          )}
          , permission {o.permission === 1 ? "public" : "private"}. As configuration:
        </p>
        <Config id="cfg-piclist" label="PicList configuration" text={json(piclistConfig(settings))} />
      </section>

      <section class="card" aria-labelledby="upic-title">
        <h2 id="upic-title">uPic (macOS)</h2>
        <p>
          In uPic's preferences, <em>Host → + → Custom</em>, then:
        </p>
        <div class="table-wrap">
          <table class="settings" aria-labelledby="upic-title">
            <thead>
              <tr>
                <th scope="col">Setting</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              <tr>
                <th scope="row">API URL</th>
                <td>
                  <code id="upic-url">{upic.url}</code>
                </td>
              </tr>
              <tr>
                <th scope="row">Method</th>
                <td>
                  <code id="upic-method">{upic.method}</code>
                </td>
              </tr>
              <tr>
                <th scope="row">File Field</th>
                <td>
                  <code id="upic-field">{upic.field}</code>
                </td>
              </tr>
              <tr>
                <th scope="row">Headers (other fields → Header)</th>
                <td>
                  <code id="upic-header-key">Authorization</code> = <code id="upic-header-value">{upic.headers[0]!.value}</code>{" "}
                  <CopyButton text={upic.headers[0]!.value} label="Copy" name="header value" />
                </td>
              </tr>
              <tr>
                <th scope="row">Bodys (other fields → Body)</th>
                <td>
                  {upic.bodys.length === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    upic.bodys.map((b) => (
                      <>
                        <code data-upic-body={b.key}>{b.key}</code> = <code>{b.value}</code>{" "}
                      </>
                    ))
                  )}
                </td>
              </tr>
              <tr>
                <th scope="row">URL Path</th>
                <td>
                  <code id="upic-result-path">{upic.resultPath}</code> <CopyButton text={upic.resultPath} label="Copy" name="URL path" />
                </td>
              </tr>
              <tr>
                <th scope="row">Domain</th>
                <td>
                  <span class="muted">empty: the answer's URL is complete</span>
                </td>
              </tr>
            </tbody>
          </table>
        </div>
      </section>

      <section class="card" aria-labelledby="curl-title">
        <h2 id="curl-title">curl</h2>
        <p>
          Uploads <code>screenshot.png</code> from the current folder and prints the answer (JSON); the address is <code>data.links.url</code>.
        </p>
        <Config id="cfg-curl" label="curl command" text={curlCommand(settings)} />
      </section>

      <section class="card" aria-labelledby="script-title">
        <h2 id="script-title">Script for screenshot tools (Flameshot and others)</h2>
        <p>
          Save it, make it executable (<code>chmod +x {settings.host}-upload.sh</code>) and give it an image, piped or as a file:{" "}
          <code>flameshot gui --raw | ./{settings.host}-upload.sh</code> or <code>./{settings.host}-upload.sh shot.png</code>. It prints the address, copies it
          with <code>wl-copy</code> or <code>xclip</code> when one is installed, and on a refusal prints the reason and exits with status 1. It needs{" "}
          <code>curl</code>, and <code>jq</code> or <code>python3</code>.
        </p>
        <Download file="script" settings={settings} signedIn={signedIn} withToken={withToken} label={`Download ${settings.host}-upload.sh`} />
        <Config id="cfg-script" label="upload script" text={uploadScript(settings)} />
      </section>
      <p class="muted small">
        Token used above: {tokenWord}. Storage: {strategyName}.
      </p>
    </Layout>
  );
}

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
  throw notFound("There is no such file.");
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
    const label = `Integrations ${formatDateTime(now)}`;
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
    if (token !== "" && !TOKEN_SHAPE.test(token)) throw validationError({ token: ["This is not a token of this site."] });
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
