/**
 * HTTP/1.1 over a plain socket bound to a chosen local address: on Linux every 127.x.y.z reaches the loopback
 * server, and the server sees each one as a different client. `fetch` cannot choose its source address.
 */
import net from "node:net";

export interface RawAnswer {
  status: number;
  headers: Headers;
  body: string;
}

export async function rawRequest(
  port: number,
  from: string,
  init: { method?: string; path: string; headers?: Record<string, string>; body?: string | Uint8Array },
): Promise<RawAnswer> {
  const body = typeof init.body === "string" ? new TextEncoder().encode(init.body) : init.body;
  const head = [`${init.method ?? "GET"} ${init.path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Connection: close"];
  for (const [k, v] of Object.entries(init.headers ?? {})) head.push(`${k}: ${v}`);
  if (body) head.push(`Content-Length: ${body.length}`);
  const raw = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: from }, () => {
      socket.write(`${head.join("\r\n")}\r\n\r\n`);
      if (body) socket.write(body);
    });
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("end", () => resolve(Buffer.concat(chunks)));
    socket.on("error", reject);
    socket.setTimeout(30_000, () => socket.destroy(new Error("no answer within 30 s")));
  });
  const split = raw.indexOf("\r\n\r\n");
  const [statusLine, ...lines] = raw.subarray(0, split).toString("latin1").split("\r\n");
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  let payload = raw.subarray(split + 4);
  if (headers.get("transfer-encoding")?.includes("chunked")) {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const eol = payload.indexOf("\r\n", at);
      const size = Number.parseInt(payload.subarray(at, eol).toString("latin1"), 16);
      if (!size) break;
      parts.push(payload.subarray(eol + 2, eol + 2 + size));
      at = eol + 2 + size + 2;
    }
    payload = Buffer.concat(parts);
  }
  return { status: Number(statusLine!.split(" ")[1]), headers, body: payload.toString("utf8") };
}
