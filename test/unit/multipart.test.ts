import { describe, expect, test } from "bun:test";
import { AppError } from "../../src/errors.ts";
import { BodyTooLarge, boundaryOf, parseMultipart, readBodyWithin } from "../../src/http/multipart.ts";

/** A body from lines joined by CRLF (the multipart line ending), as bytes. */
const crlf = (...lines: string[]) => new TextEncoder().encode(lines.join("\r\n"));
const cd = (params: string) => `Content-Disposition: form-data; ${params}`;

describe("boundaryOf", () => {
  const rows: [label: string, contentType: string | undefined, boundary: string | null][] = [
    ["plain token", "multipart/form-data; boundary=abc123", "abc123"],
    ["no space after ;", "multipart/form-data;boundary=abc", "abc"],
    ["quoted with space and colon", 'multipart/form-data; boundary="a b:c"', "a b:c"],
    ["quoted, other params around", 'multipart/form-data; charset=utf-8; boundary="xyz"; foo=bar', "xyz"],
    ["type and param name in other case", "Multipart/Form-Data; charset=UTF-8; BOUNDARY=AbC", "AbC"],
    ["followed by another param", "multipart/form-data; boundary=abc; charset=utf-8", "abc"],
    ["browser-style", "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW", "----WebKitFormBoundary7MA4YWxkTrZu0gW"],
    ["a boundary= inside another quoted param is not the boundary", 'multipart/form-data; foo="x; boundary=evil"; boundary=good', "good"],
    ["first boundary wins", "multipart/form-data; boundary=one; boundary=two", "one"],
    ["200 characters", `multipart/form-data; boundary=${"a".repeat(200)}`, "a".repeat(200)],
    ["201 characters", `multipart/form-data; boundary=${"a".repeat(201)}`, null],
    ["unquoted with a space", "multipart/form-data; boundary=abc def", null],
    ["empty", "multipart/form-data; boundary=", null],
    ["empty quoted", 'multipart/form-data; boundary=""', null],
    ["no boundary param", "multipart/form-data", null],
    ["param whose name ends in boundary", "multipart/form-data; xboundary=abc", null],
    ["other multipart subtype", "multipart/mixed; boundary=abc", null],
    ["not multipart", "application/json; boundary=abc", null],
    ["urlencoded", "application/x-www-form-urlencoded", null],
    ["missing header", undefined, null],
    ["empty header", "", null],
  ];
  test.each(rows)("%s", (_label, contentType, boundary) => {
    expect(boundaryOf(contentType)).toBe(boundary);
  });
});

interface Parsed {
  fields: Record<string, string>;
  files: Record<string, { filename: string; contentType: string; bytes: number[] }>;
}

const parse = (body: Uint8Array, boundary: string): Parsed => {
  const r = parseMultipart(body, boundary);
  return {
    fields: Object.fromEntries(r.fields),
    files: Object.fromEntries([...r.files].map(([k, f]) => [k, { filename: f.filename, contentType: f.contentType, bytes: [...f.bytes] }])),
  };
};
const bytes = (s: string) => [...new TextEncoder().encode(s)];
const noParts: Parsed = { fields: {}, files: {} };
const oneField = (name: string, value: string): Parsed => ({ fields: { [name]: value }, files: {} });
const oneFile = (filename: string, contentType = "image/png", content = "PNGDATA"): Parsed => ({
  fields: {},
  files: { file: { filename, contentType, bytes: bytes(content) } },
});
const fileBody = (disposition: string, type = "Content-Type: image/png") => crlf("--B", cd(disposition), type, "", "PNGDATA", "--B--", "");
const MALFORMED = { error: 400 } as const;

describe("parseMultipart", () => {
  // NUL, 0xFF, "\r\n--A", "\r\n\r\n": everything but "\r\n--B", which the sender must not put in a part
  const binary = new Uint8Array([0x00, 0xff, 0x0d, 0x0a, 0x2d, 0x2d, 0x41, 0x0d, 0x0a, 0x0d, 0x0a, 0x2d]);
  const rows: [label: string, body: Uint8Array, boundary: string, expected: Parsed | typeof MALFORMED][] = [
    ["one field", crlf("--B", cd('name="a"'), "", "1", "--B--", ""), "B", oneField("a", "1")],
    [
      "several fields and one file",
      crlf(
        "--B",
        cd('name="strategy_id"'),
        "",
        "2",
        "--B",
        cd('name="permission"'),
        "",
        "0",
        "--B",
        cd('name="file"; filename="a.png"'),
        "Content-Type: image/png",
        "",
        "PNGDATA",
        "--B",
        cd('name="ssl"'),
        "",
        "true",
        "--B--",
        "",
      ),
      "B",
      {
        fields: { strategy_id: "2", permission: "0", ssl: "true" },
        files: { file: { filename: "a.png", contentType: "image/png", bytes: bytes("PNGDATA") } },
      },
    ],
    [
      "preamble before the first boundary and epilogue after the last",
      crlf("This is a preamble.", "It is ignored, -- B too.", "", "--B", cd('name="a"'), "", "1", "--B--", "epilogue", "--B", cd('name="b"'), "", "2"),
      "B",
      oneField("a", "1"),
    ],
    ["no CRLF after the closing delimiter", crlf("--B", cd('name="a"'), "", "1", "--B--"), "B", oneField("a", "1")],
    ["transport padding after a delimiter", crlf("--B \t", cd('name="a"'), "", "1", "--B--"), "B", oneField("a", "1")],
    ["boundary with a space and a colon", crlf("--a b:c", cd('name="a"'), "", "1", "--a b:c--", ""), "a b:c", oneField("a", "1")],
    ["empty field value", crlf("--B", cd('name="a"'), "", "", "--B--", ""), "B", oneField("a", "")],
    ["field value with CRLF inside", crlf("--B", cd('name="a"'), "", "x", "y", "--B--", ""), "B", oneField("a", "x\r\ny")],
    ["field value containing -- and the boundary mid-line", crlf("--B", cd('name="a"'), "", "a --B b", "--", "--B--", ""), "B", oneField("a", "a --B b\r\n--")],
    ["UTF-8 field value", crlf("--B", cd('name="title"'), "", "图片 ✓", "--B--", ""), "B", oneField("title", "图片 ✓")],
    ["a repeated field keeps the first", crlf("--B", cd('name="a"'), "", "1", "--B", cd('name="a"'), "", "2", "--B--", ""), "B", oneField("a", "1")],
    ["header names and params in other case", crlf("--B", 'content-disposition: form-data; NAME="a"', "", "1", "--B--", ""), "B", oneField("a", "1")],
    ["unquoted name", crlf("--B", cd("name=a"), "", "1", "--B--", ""), "B", oneField("a", "1")],
    ["name after filename", fileBody('filename="a.png"; name="file"'), "B", oneFile("a.png")],
    ["plain filename", fileBody('name="file"; filename="a.png"'), "B", oneFile("a.png")],
    ["unquoted filename", fileBody("name=file; filename=a.png"), "B", oneFile("a.png")],
    [
      "empty filename (browser with no file chosen)",
      fileBody('name="file"; filename=""', "Content-Type: application/octet-stream"),
      "B",
      oneFile("", "application/octet-stream"),
    ],
    ["filename* (RFC 5987) wins over filename", fileBody(`name="file"; filename="fallback.png"; filename*=UTF-8''%E5%9B%BE%20a.png`), "B", oneFile("图 a.png")],
    ["filename* alone", fileBody(`name="file"; filename*=utf-8'en'%C3%A9t%C3%A9.png`), "B", oneFile("été.png")],
    ["filename* quoted (lenient)", fileBody(`name="file"; filename*="UTF-8''a%20b.png"`), "B", oneFile("a b.png")],
    ["filename* with bad percent-encoding falls back to filename", fileBody(`name="file"; filename="ok.png"; filename*=UTF-8''%E5%9B`), "B", oneFile("ok.png")],
    ["filename* without charset falls back to filename", fileBody(`name="file"; filename="ok.png"; filename*=a.png`), "B", oneFile("ok.png")],
    ["quoted filename with escaped quotes", fileBody('name="file"; filename="say \\"hi\\".png"'), "B", oneFile('say "hi".png')],
    ["quoted filename with WHATWG percent-escapes", fileBody('name="file"; filename="%22a%22%0D%0A.png"'), "B", oneFile('"a"\r\n.png')],
    ["filename with a Windows path (backslashes kept)", fileBody('name="file"; filename="C:\\x\\a.png"'), "B", oneFile("C:\\x\\a.png")],
    ["filename with a POSIX path", fileBody('name="file"; filename="/tmp/x/a.png"'), "B", oneFile("/tmp/x/a.png")],
    ["filename with ; and name= inside the quotes", fileBody('name="file"; filename="x; name=evil.png"'), "B", oneFile("x; name=evil.png")],
    ["filename with ; name= inside the quotes, name last", fileBody('filename="x; name=evil.png"; name="file"'), "B", oneFile("x; name=evil.png")],
    [
      "filename* inside a quoted filename is not a param",
      fileBody(`name="file"; filename="a; filename*=UTF-8''evil.png"`),
      "B",
      oneFile("a; filename*=UTF-8''evil.png"),
    ],
    ["UTF-8 filename (raw bytes, as browsers send)", fileBody('name="file"; filename="照片.png"'), "B", oneFile("照片.png")],
    [
      "declared type is kept, lower-cased, without params",
      fileBody('name="file"; filename="a.png"', "Content-Type: Image/JPEG; q=1"),
      "B",
      oneFile("a.png", "image/jpeg"),
    ],
    ["file part without Content-Type", crlf("--B", cd('name="file"; filename="a.png"'), "", "PNGDATA", "--B--", ""), "B", oneFile("a.png", "")],
    ["empty file", crlf("--B", cd('name="file"; filename="a.png"'), "Content-Type: image/png", "", "", "--B--", ""), "B", oneFile("a.png", "image/png", "")],
    [
      "binary content with CR, LF, --B and NUL is kept byte for byte",
      new Uint8Array([...crlf("--B", cd('name="file"; filename="a.bin"'), "", ""), ...binary, ...crlf("", "--B--", "")]),
      "B",
      { fields: {}, files: { file: { filename: "a.bin", contentType: "", bytes: [...binary] } } },
    ],
    [
      "a repeated file keeps the first",
      crlf("--B", cd('name="file"; filename="1.png"'), "", "PNGDATA", "--B", cd('name="file"; filename="2.png"'), "", "x", "--B--"),
      "B",
      oneFile("1.png", ""),
    ],
    ["only the closing delimiter", crlf("--B--", ""), "B", noParts],
    // malformed bodies: a 400 AppError, never a crash or a silently empty result
    ["empty body", new Uint8Array(0), "B", MALFORMED],
    ["boundary never appears", crlf("hello", "world"), "B", MALFORMED],
    ["different boundary than declared", crlf("--X", cd('name="a"'), "", "1", "--X--", ""), "B", MALFORMED],
    ["LF-only line endings (RFC 7578 requires CRLF)", new TextEncoder().encode(`--B\n${cd('name="a"')}\n\n1\n--B--\n`), "B", MALFORMED],
    ["truncated: no closing delimiter", crlf("--B", cd('name="a"'), "", "1", ""), "B", MALFORMED],
    ["truncated inside the content", crlf("--B", cd('name="file"; filename="a.png"'), "", "PNGDA"), "B", MALFORMED],
    ["truncated inside the headers", crlf("--B", cd('name="a"')), "B", MALFORMED],
    ["truncated right after a delimiter", crlf("--B", cd('name="a"'), "", "1", "--B"), "B", MALFORMED],
    ["truncated after a delimiter line", crlf("--B", cd('name="a"'), "", "1", "--B", ""), "B", MALFORMED],
    ["junk after a delimiter", crlf("--Bjunk", cd('name="a"'), "", "1", "--B--"), "B", MALFORMED],
    // RFC 2046: a line that begins with the delimiter is a delimiter; a sender must not put one in a part
    ["the delimiter inside a part's content", crlf("--B", cd('name="a"'), "", "x", "--B-and-more", "--B--"), "B", MALFORMED],
    ["part without a name", crlf("--B", "Content-Disposition: form-data", "", "1", "--B--"), "B", MALFORMED],
    ["part without Content-Disposition", crlf("--B", "Content-Type: text/plain", "", "1", "--B--"), "B", MALFORMED],
    ["part without headers", crlf("--B", "", "1", "--B--"), "B", MALFORMED],
  ];
  test.each(rows)("%s", (_label, body, boundary, expected) => {
    if ("error" in expected) {
      let thrown: unknown;
      try {
        parseMultipart(body, boundary);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(AppError);
      expect((thrown as AppError).status).toBe(expected.error);
      expect((thrown as AppError).message).toBe("Malformed multipart/form-data body.");
    } else {
      expect(parse(body, boundary)).toEqual(expected);
    }
  });

  test("a body encoded by the platform's FormData (as browsers and clients send it)", async () => {
    const form = new FormData();
    form.append("strategy_id", "1");
    form.append("file", new File([binary], '照片 "1".png', { type: "image/jpeg" }));
    const request = new Request("http://localhost/api/v1/upload", { method: "POST", body: form });
    const boundary = boundaryOf(request.headers.get("content-type") ?? undefined);
    expect(boundary).not.toBeNull();
    expect(parse(new Uint8Array(await request.arrayBuffer()), boundary!)).toEqual({
      fields: { strategy_id: "1" },
      files: { file: { filename: '照片 "1".png', contentType: "image/jpeg", bytes: [...binary] } },
    });
  });

  test("a subarray of a larger buffer is read from its own offset", () => {
    const inner = crlf("--B", cd('name="a"'), "", "1", "--B--");
    const outer = new Uint8Array(inner.length + 10);
    outer.set(inner, 5);
    expect(parse(outer.subarray(5, 5 + inner.length), "B")).toEqual(oneField("a", "1"));
  });
});

/** A request whose body arrives as the given chunks, with no Content-Length. */
const streamed = (...chunks: string[]) =>
  new Request("http://localhost/", {
    method: "POST",
    body: new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
        controller.close();
      },
    }),
  });
const sized = (body: string, contentLength?: string) =>
  new Request("http://localhost/", {
    method: "POST",
    body,
    headers: contentLength === undefined ? {} : { "content-length": contentLength },
  });
const TOO_LARGE = { tooLarge: true } as const;

describe("readBodyWithin", () => {
  const rows: [label: string, request: () => Request, limit: number, expected: string | typeof TOO_LARGE][] = [
    ["no body", () => new Request("http://localhost/", { method: "POST" }), 10, ""],
    ["empty body", () => sized(""), 10, ""],
    ["empty body, limit 0", () => sized(""), 0, ""],
    ["under the limit", () => sized("abc"), 10, "abc"],
    ["exactly at the limit", () => sized("0123456789"), 10, "0123456789"],
    ["one byte over the limit", () => sized("0123456789X"), 10, TOO_LARGE],
    ["exactly at the limit, declared", () => sized("0123456789", "10"), 10, "0123456789"],
    ["declared Content-Length over the limit (small body)", () => sized("abc", "11"), 10, TOO_LARGE],
    ["declared Content-Length far over the limit", () => sized("abc", "99999999999"), 10, TOO_LARGE],
    ["declared under the limit but the body is longer", () => sized("0123456789X", "3"), 10, TOO_LARGE],
    ["unparseable Content-Length is ignored", () => sized("abc", "lots"), 10, "abc"],
    ["multibyte characters count as bytes", () => sized("图图图图"), 11, TOO_LARGE],
    ["streamed chunks, exactly at the limit", () => streamed("01234", "56789"), 10, "0123456789"],
    ["streamed chunks, one byte over the limit", () => streamed("01234", "56789", "X"), 10, TOO_LARGE],
    ["streamed, one chunk over the limit", () => streamed("0123456789X"), 10, TOO_LARGE],
    ["streamed, empty chunks", () => streamed("", "ab", ""), 10, "ab"],
  ];
  test.each(rows)("%s", async (_label, request, limit, expected) => {
    const result = await readBodyWithin(request(), { limit, deadlineMs: 10_000 }).then(
      (b) => ({ body: Buffer.from(b).toString("utf8"), isUint8Array: b instanceof Uint8Array }),
      (e: unknown) => e,
    );
    if (typeof expected === "string") {
      expect(result).toEqual({ body: expected, isUint8Array: true });
    } else {
      expect(result).toBeInstanceOf(BodyTooLarge);
      expect(result).toBeInstanceOf(AppError);
      expect((result as BodyTooLarge).status).toBe(400);
      expect((result as BodyTooLarge).limitBytes).toBe(limit);
    }
  });

  test("a declared Content-Length over the limit is refused before the body is read", async () => {
    const request = sized("abc", "11");
    await expect(readBodyWithin(request, { limit: 10, deadlineMs: 10_000 })).rejects.toBeInstanceOf(BodyTooLarge);
    expect(request.bodyUsed).toBe(false);
  });

  test("reading stops at the limit: the stream is cancelled, later chunks are never pulled", async () => {
    let pulls = 0;
    let cancelled = false;
    const request = new Request("http://localhost/", {
      method: "POST",
      body: new ReadableStream<Uint8Array>(
        {
          pull(controller) {
            pulls++;
            controller.enqueue(new Uint8Array(4));
            if (pulls === 1000) controller.close();
          },
          cancel() {
            cancelled = true;
          },
        },
        { highWaterMark: 0 },
      ),
    });
    await expect(readBodyWithin(request, { limit: 10, deadlineMs: 10_000 })).rejects.toBeInstanceOf(BodyTooLarge);
    expect(cancelled).toBe(true);
    expect(pulls).toBeLessThan(10);
  });
});
