import http from "node:http";
import https from "node:https";
import { isIP } from "node:net";
import { checkDestination, sameAddress, type AllowList, type Resolver } from "./address-guard.ts";

/**
 * One delivery attempt of a webhook: a POST of an already signed body to a user's URL, guarded against SSRF.
 * The destination is checked at every attempt (a name that resolved to a public address at subscription time may
 * resolve to 10.0.0.5 now), and the connection goes to exactly the address checked: the request is made to the IP
 * literal, with the URL's host in the Host header and as the TLS server name, so the certificate is still verified
 * against the URL's host name and no second DNS answer is ever asked for; a `lookup` that can only answer the checked
 * address backs this up, and the peer's address is compared after connecting. Redirects are never followed (a 3xx is an
 * answer, which the caller counts as a failure), the whole attempt is bounded in time, and at most maxResponseBytes
 * of the answer are read before the connection is dropped. Retries, signing and logging are the caller's.
 */

export type SendResult =
  | { kind: "answered"; status: number; ms: number; body: string; truncated: boolean; location?: string }
  | { kind: "refused"; reason: string; ms: number; shown: string }
  | { kind: "failed"; reason: string; ms: number; shown?: string };

interface SendRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  allow: AllowList;
  resolve?: Resolver;
  timeoutMs?: number;
  maxResponseBytes?: number;
}

const USER_AGENT = "image-host-webhooks/1";
/** Headers that describe the connection or the framing, which are ours to set. */
const OWN_HEADERS = new Set([
  "host",
  "content-length",
  "content-type",
  "user-agent",
  "connection",
  "transfer-encoding",
  "keep-alive",
  "expect",
  "upgrade",
  "te",
]);
const ERROR_TEXT: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  EPIPE: "connection closed while sending",
};

function shortReason(e: unknown): string {
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err?.code === "string" ? err.code : "";
  if (ERROR_TEXT[code]) return ERROR_TEXT[code]!;
  const message = (typeof err?.message === "string" ? err.message : String(e)).split("\n")[0]!.slice(0, 200);
  return code && !message.includes(code) ? `${code}: ${message}` : message || code || "request failed";
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

export async function sendWebhook(req: SendRequest): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const timeoutMs = req.timeoutMs ?? 10_000;
  const maxBytes = req.maxResponseBytes ?? 4096;
  const timedOut = `timed out after ${seconds(timeoutMs)}`;

  let url: URL;
  try {
    url = new URL(req.url);
  } catch {
    return { kind: "refused", reason: "not a valid URL", shown: "not a valid URL", ms: elapsed() };
  }

  let timer: ReturnType<typeof setTimeout> | undefined;
  // the one deadline of the attempt; what it cancels changes once the request is under way
  let onTimeout: () => void = () => {};
  const deadline = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => {
      onTimeout();
      resolve("timeout");
    }, timeoutMs);
  });
  try {
    const checked = await Promise.race([checkDestination(url, req.allow, req.resolve), deadline]);
    if (checked === "timeout") return { kind: "failed", reason: timedOut, ms: elapsed() };
    if (!checked.ok) return { kind: "refused", reason: checked.reason, shown: checked.shown, ms: elapsed() };
    const { address, family } = checked;

    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = value;
    headers.host = url.host;
    headers["content-type"] = "application/json";
    headers["user-agent"] = USER_AGENT;
    headers["content-length"] = String(Buffer.byteLength(req.body));

    const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    const pinnedLookup = (_name: string, options: unknown, callback?: unknown) => {
      const done = (typeof options === "function" ? options : callback) as (...args: unknown[]) => void;
      if (typeof options === "object" && options !== null && (options as { all?: boolean }).all) done(null, [{ address, family }]);
      else done(null, address, family);
    };
    const options: https.RequestOptions = {
      method: "POST",
      host: address.replace(/%.*$/, ""),
      family,
      port: url.port === "" ? undefined : Number(url.port),
      path: `${url.pathname}${url.search}`,
      headers,
      agent: false,
      lookup: pinnedLookup as unknown as https.RequestOptions["lookup"],
      // SNI carries names only; for an IP literal URL the certificate is checked against the address
      servername: isIP(hostname) === 0 ? hostname : undefined,
      rejectUnauthorized: true,
    };

    return await new Promise<SendResult>((settle) => {
      let done = false;
      let request: http.ClientRequest | undefined;
      let response: http.IncomingMessage | undefined;
      const finish = (result: SendResult) => {
        if (done) return;
        done = true;
        response?.destroy();
        request?.destroy();
        settle(result);
      };
      onTimeout = () => finish({ kind: "failed", reason: timedOut, ms: elapsed() });
      try {
        request = (url.protocol === "https:" ? https : http).request(options, (res) => {
          response = res;
          const remote = res.socket?.remoteAddress;
          if (remote && !sameAddress(remote, address)) {
            finish({
              kind: "failed",
              reason: `connected to ${remote}, not to the checked ${address}`,
              shown: "connected to another address than the one checked",
              ms: elapsed(),
            });
            return;
          }
          const status = res.statusCode ?? 0;
          const location = typeof res.headers.location === "string" ? res.headers.location : undefined;
          const chunks: Buffer[] = [];
          let size = 0;
          const answered = (truncated: boolean) => {
            const bytes = Buffer.concat(chunks, size);
            // stream: an incomplete character at the cut is left out rather than shown as U+FFFD
            const body = new TextDecoder().decode(bytes, { stream: truncated });
            finish({ kind: "answered", status, ms: elapsed(), body, truncated, ...(location !== undefined ? { location } : {}) });
          };
          res.on("data", (chunk: Buffer) => {
            if (done) return;
            if (size + chunk.length > maxBytes) {
              chunks.push(chunk.subarray(0, maxBytes - size));
              size = maxBytes;
              answered(true);
              return;
            }
            chunks.push(chunk);
            size += chunk.length;
          });
          res.on("end", () => answered(false));
          // the status is what counts; a connection lost during the body still delivered the webhook
          res.on("error", () => answered(false));
          res.on("aborted", () => answered(false));
        });
        request.on("error", (e) => finish({ kind: "failed", reason: shortReason(e), ms: elapsed() }));
        request.end(req.body);
      } catch (e) {
        // invalid header names or values are thrown at once
        finish({ kind: "failed", reason: shortReason(e), ms: elapsed() });
      }
    });
  } finally {
    clearTimeout(timer);
  }
}
