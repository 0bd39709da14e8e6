/**
 * The uploaders' sections of the Integrations page, one tab each (app.js turns a `[data-tabs]` element's panels into
 * tabs: arrows, Home and End move between them; without script the tab list stays hidden and every section shows).
 */
import type { Child } from "hono/jsx";
import { Cell, CopyButton, FormToken, Table } from "../components/index.ts";
import { rich, t } from "../i18n/index.ts";
import { BASE, type SignedIn } from "../session.ts";
import {
  curlCommand,
  type DownloadName,
  downloads,
  json,
  type Options,
  picgoConfig,
  piclistConfig,
  type Settings,
  sharexUploader,
  uploadScript,
  upicHost,
} from "./configs.ts";

/** The options as a query string, for the links that keep them. */
export const query = (o: Options) => {
  const q = new URLSearchParams();
  if (o.strategyId !== null) q.set("strategy_id", String(o.strategyId));
  if (o.albumId !== null) q.set("album_id", String(o.albumId));
  q.set("permission", String(o.permission));
  return q.toString();
};

/** The hidden fields that carry the options (and, on a download, the token) into a form. */
export function OptionFields({ options, token }: { options: Options; token?: string }) {
  return (
    <>
      {options.strategyId !== null && <input type="hidden" name="strategy_id" value={String(options.strategyId)} />}
      {options.albumId !== null && <input type="hidden" name="album_id" value={String(options.albumId)} />}
      <input type="hidden" name="permission" value={String(options.permission)} />
      {token !== undefined && <input type="hidden" name="token" value={token} />}
    </>
  );
}

/** A block of settings with its copy button; `id` is the element the tests and the label point at. */
function Config({ id, label, text }: { id: string; label: string; text: string }) {
  return (
    <div class="config">
      <pre id={id} role="region" tabindex={0} aria-label={label}>
        <code>{text}</code>
      </pre>
      <CopyButton text={text} label={t("integrations.copy", { name: label })} name={label} />
    </div>
  );
}

/** A file to download: a link with the placeholder, or a form that sends the token the page just made. */
function Download({ file, settings, signedIn, withToken }: { file: DownloadName; settings: Settings; signedIn: SignedIn; withToken: boolean }) {
  const action = `${BASE}/integrations/download/${file}`;
  const name = downloads[file](settings).name;
  const label = t("integrations.download", { file: name });
  if (!withToken) {
    return (
      <a class="button" href={`${action}?${query(settings.options)}`} download={name}>
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

/** A table of an uploader's settings: its own name for each, and the value. */
function SettingsTable({ label, rows }: { label: string; rows: [name: string, value: Child][] }) {
  return (
    <Table class="settings" label={label} columns={[t("integrations.setting"), t("integrations.value")]}>
      {rows.map(([name, value]) => (
        <tr>
          <th scope="row">{name}</th>
          <Cell>{value}</Cell>
        </tr>
      ))}
    </Table>
  );
}

const muted = (text: string) => <span class="muted small">{text}</span>;

interface Props {
  settings: Settings;
  signedIn: SignedIn;
  withToken: boolean;
}

function ShareX({ settings, signedIn, withToken }: Props) {
  return (
    <>
      <p>{rich("integrations.sharex.intro", { menu: <em>{t("integrations.sharex.menu")}</em> })}</p>
      <Download file="sharex" settings={settings} signedIn={signedIn} withToken={withToken} />
      <Config id="cfg-sharex" label={t("integrations.sharex.config")} text={json(sharexUploader(settings))} />
      <p class="muted small">
        {rich("integrations.sharex.noDelete", {
          request: <code>DELETE /api/v1/images/&lt;key&gt;</code>,
          images: (chunks) => <a href={`${BASE}/images`}>{chunks}</a>,
        })}
      </p>
    </>
  );
}

function PicGo({ settings }: Props) {
  const picgo = picgoConfig(settings).picBed.lankong;
  return (
    <>
      <p>{rich("integrations.picgo.intro", { plugin: <code>picgo-plugin-lankong</code>, host: <em>lankong</em> })}</p>
      <SettingsTable
        label={t("integrations.picgo.settings")}
        rows={[
          [
            t("integrations.picgo.version"),
            <>
              <code>V2</code> {muted(t("integrations.picgo.versionNote"))}
            </>,
          ],
          [
            t("integrations.picgo.server"),
            <>
              <code>{picgo.server}</code> {muted(t("integrations.picgo.serverNote"))}
            </>,
          ],
          [
            t("integrations.picgo.token"),
            <>
              <code>{picgo.token}</code> {muted(t("integrations.picgo.tokenNote"))}
            </>,
          ],
          [
            t("integrations.picgo.strategy"),
            picgo.strategyId ? <code>{picgo.strategyId}</code> : <span class="muted">{t("integrations.picgo.strategyEmpty")}</span>,
          ],
          [t("integrations.picgo.album"), picgo.albumId ? <code>{picgo.albumId}</code> : <span class="muted">{t("integrations.picgo.albumEmpty")}</span>],
          [t("integrations.picgo.permission"), t("integrations.permission", { permission: String(picgo.permission) })],
          [t("integrations.picgo.ignoreCert"), t("integrations.off")],
          [t("integrations.picgo.syncDelete"), t("integrations.picgo.syncDeleteValue")],
        ]}
      />
      <p>{rich("integrations.picgo.file", { picBed: <code>picBed</code>, data: <code>data.json</code>, core: <code>config.json</code> })}</p>
      <Config id="cfg-picgo" label={t("integrations.picgo.config")} text={json(picgoConfig(settings))} />
    </>
  );
}

function PicList({ settings }: Props) {
  const piclist = piclistConfig(settings).picBed.lskyplist;
  return (
    <>
      <p>
        {rich("integrations.piclist.intro", {
          name: <em>Lsky Pro</em>,
          id: <code>lskyplist</code>,
          version: <code>V2</code>,
          host: <code>{piclist.host}</code>,
          token: <code>{piclist.token}</code>,
          strategy: piclist.strategyId ? rich("integrations.piclist.strategy", { id: <code>{piclist.strategyId}</code> }) : "",
          album: piclist.albumId ? rich("integrations.piclist.album", { id: <code>{piclist.albumId}</code> }) : "",
          permission: t("integrations.permission", { permission: String(piclist.permission) }),
        })}
      </p>
      <Config id="cfg-piclist" label={t("integrations.piclist.config")} text={json(piclistConfig(settings))} />
    </>
  );
}

function UPic({ settings }: Props) {
  const upic = upicHost(settings);
  const header = upic.headers[0]!;
  return (
    <>
      <p>{rich("integrations.upic.intro", { menu: <em>{t("integrations.upic.menu")}</em> })}</p>
      <SettingsTable
        label={t("integrations.upic.settings")}
        rows={[
          [t("integrations.upic.url"), <code id="upic-url">{upic.url}</code>],
          [t("integrations.upic.method"), <code id="upic-method">{upic.method}</code>],
          [t("integrations.upic.field"), <code id="upic-field">{upic.field}</code>],
          [
            t("integrations.upic.headers"),
            <>
              <code id="upic-header-key">{header.key}</code> = <code id="upic-header-value">{header.value}</code>{" "}
              <CopyButton text={header.value} label={t("common.copy")} name={t("integrations.upic.headerName")} />
            </>,
          ],
          [
            t("integrations.upic.bodies"),
            upic.bodys.length === 0 ? (
              <span class="muted">{t("integrations.upic.noBodies")}</span>
            ) : (
              upic.bodys.map((b) => (
                <>
                  <code data-upic-body={b.key}>{b.key}</code> = <code>{b.value}</code>{" "}
                </>
              ))
            ),
          ],
          [
            t("integrations.upic.path"),
            <>
              <code id="upic-result-path">{upic.resultPath}</code>{" "}
              <CopyButton text={upic.resultPath} label={t("common.copy")} name={t("integrations.upic.pathName")} />
            </>,
          ],
          [t("integrations.upic.domain"), <span class="muted">{t("integrations.upic.domainEmpty")}</span>],
        ]}
      />
    </>
  );
}

function Curl({ settings }: Props) {
  return (
    <>
      <p>{rich("integrations.curl.intro", { file: <code>screenshot.png</code>, path: <code>data.links.url</code> })}</p>
      <Config id="cfg-curl" label={t("integrations.curl.config")} text={curlCommand(settings)} />
    </>
  );
}

function Script({ settings, signedIn, withToken }: Props) {
  const name = `${settings.host}-upload.sh`;
  return (
    <>
      <p>
        {rich("integrations.script.intro", {
          chmod: <code>chmod +x {name}</code>,
          piped: <code>flameshot gui --raw | ./{name}</code>,
          file: <code>./{name} shot.png</code>,
          wl: <code>wl-copy</code>,
          xclip: <code>xclip</code>,
          curl: <code>curl</code>,
          jq: <code>jq</code>,
          python: <code>python3</code>,
        })}
      </p>
      <Download file="script" settings={settings} signedIn={signedIn} withToken={withToken} />
      <Config id="cfg-script" label={t("integrations.script.config")} text={uploadScript(settings)} />
    </>
  );
}

/** Each uploader: its id (the panel's, and the address's #fragment), the tab's word, the section's title, its body. */
const UPLOADERS: { id: string; tab: () => string; title: () => string; Body: (p: Props) => Child }[] = [
  { id: "sharex", tab: () => "ShareX", title: () => t("integrations.sharex.title"), Body: ShareX },
  { id: "picgo", tab: () => "PicGo", title: () => t("integrations.picgo.title"), Body: PicGo },
  { id: "piclist", tab: () => "PicList", title: () => t("integrations.piclist.title"), Body: PicList },
  { id: "upic", tab: () => "uPic", title: () => t("integrations.upic.title"), Body: UPic },
  { id: "curl", tab: () => "curl", title: () => t("integrations.curl.title"), Body: Curl },
  { id: "script", tab: () => t("integrations.tabs.script"), title: () => t("integrations.script.title"), Body: Script },
];

/** The uploaders as tabs (the tab list shows once the script runs), each section a panel. */
export function Uploaders(props: Props) {
  return (
    <div class="tabs" data-tabs>
      <div role="tablist" aria-label={t("integrations.tabs.label")} hidden>
        {UPLOADERS.map((u, i) => (
          <button type="button" role="tab" id={`tab-${u.id}`} aria-controls={u.id} aria-selected={i === 0 ? "true" : "false"} tabindex={i === 0 ? 0 : -1}>
            {u.tab()}
          </button>
        ))}
      </div>
      {UPLOADERS.map((u) => (
        <section id={u.id} class="card" role="tabpanel" aria-labelledby={`${u.id}-title`} tabindex={0}>
          <h2 id={`${u.id}-title`}>{u.title()}</h2>
          {u.Body(props)}
        </section>
      ))}
    </div>
  );
}
