/**
 * The uploaders' settings, one builder per uploader (ShareX, PicGo, PicList, uPic, curl, a shell script for
 * screenshot tools), all sending POST /api/v1/upload with `Authorization: Bearer <token>`.
 */

/** What the settings hold where the user's token goes, when the page did not just make one. */
export const TOKEN_PLACEHOLDER = "PASTE-YOUR-TOKEN-HERE";
/** The ShareX version the .sxcu file declares: its `{json:…}` syntax (ShareX 14+) is used as is. */
const SHAREX_VERSION = "15.0.0";

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

export const uploadUrl = (s: Settings) => `${s.base}/api/v1/upload`;

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
export function sharexUploader(s: Settings) {
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

/** The fields the Lsky Pro uploaders (PicGo's plugin, PicList's port of it) share: token, strategy, album, permission. */
const lskyFields = (s: Settings) => ({
  token: `Bearer ${s.token}`,
  strategyId: s.options.strategyId === null ? "" : String(s.options.strategyId),
  albumId: s.options.albumId === null ? "" : String(s.options.albumId),
  permission: s.options.permission,
});

/** PicGo's `picBed` section for picgo-plugin-lankong (its "V2" is Lsky Pro 2's API, /api/v1, which this one is). */
export function picgoConfig(s: Settings) {
  return {
    picBed: {
      uploader: "lankong",
      current: "lankong",
      lankong: {
        lskyProVersion: "V2",
        server: s.base,
        ...lskyFields(s),
        ignoreCertErr: false,
        syncDelete: false,
      },
    },
    picgoPlugins: { "picgo-plugin-lankong": true },
  };
}

/** PicList's `picBed` section for its built-in Lsky Pro uploader (lskyplist, a port of the same plugin). */
export function piclistConfig(s: Settings) {
  return {
    picBed: {
      uploader: "lskyplist",
      current: "lskyplist",
      lskyplist: {
        version: "V2",
        host: s.base,
        ...lskyFields(s),
      },
    },
  };
}

/** uPic's custom host, field by field as its preferences name them. */
export function upicHost(s: Settings) {
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
export function curlCommand(s: Settings) {
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

export const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

/** The downloadable files. */
export const downloads = {
  sharex: (s: Settings) => ({ name: `${s.host}.sxcu`, type: "application/json; charset=utf-8", body: json(sharexUploader(s)) }),
  script: (s: Settings) => ({ name: `${s.host}-upload.sh`, type: "text/x-shellscript; charset=utf-8", body: uploadScript(s) }),
};
export type DownloadName = keyof typeof downloads;
