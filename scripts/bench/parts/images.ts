/**
 * The image cells: variants (cached and cold, against the in-process floor), the lossless metadata strip, memory while
 * cold variants are made, the thumbnail study, and what each AVIF effort costs. One server (the embedded default,
 * TRUST_PROXY=1 so that each cold request names its own address and the cold budget per address never applies); the
 * floors in scripts/bench/worker.ts's process.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { AVIF_EFFORT } from "../../../src/images/avif.ts";
import { jpegSegments, SOS } from "../../../src/images/jpeg.ts";
import { cameraLikePhoto } from "../../../test/support/photos.ts";
import { cpuMs, cpuSince, MemorySampler, treeCpu, treeMemory } from "../../../test/support/proc.ts";
import { photo } from "../lib/images.ts";
import { render } from "../lib/report.ts";
import { floorProcess, fmt, markdownTable, median, percentile, ratio, startFacts, tempDir } from "../lib/run.ts";
import { admin, createAccount, serverCommand, serverScriptEnv, startAppServer, uploadOnce } from "../lib/server.ts";
import { Wrk } from "../lib/wrk.ts";
import type { PartOptions } from "./index.ts";

type Fmt = "webp" | "avif";
const ms = (x: number) => `${fmt(x)} ms`;
const kB = (b: number) => `${Math.round(b / 1024).toLocaleString("en-US")} KB`;
const MB = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
const atLeast = (x: number, t: number) =>
  x >= t ? `**met** (${x.toFixed(3)}× ≥ ${ratio(t)})` : `**missed** (${x.toFixed(3)}×, ${(((t - x) / t) * 100).toFixed(1)} % short of ${ratio(t)})`;
const atMost = (x: number, t: number) =>
  x <= t ? `**met** (${x.toFixed(3)}× ≤ ${ratio(t)})` : `**missed** (${x.toFixed(3)}×, ${(((x - t) / t) * 100).toFixed(1)} % over ${ratio(t)})`;
let address = 0;
/** A fresh client address per cold request: the cold budget (30 a minute per address) never applies. */
const fresh = () => ({ "x-forwarded-for": `10.1.${(++address >> 8) & 255}.${address & 255}` });

async function get(url: string, headers: Record<string, string> = {}) {
  const t0 = performance.now();
  const res = await fetch(url, { headers });
  const body = await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t0, bytes: body.byteLength, etag: res.headers.get("etag") ?? "", type: res.headers.get("content-type") };
}

/** The JPEG with 4 KB in the middle of its entropy-coded data overwritten by bytes other than 0xFF (the markers stay). */
function corruptScan(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  const sos = [...jpegSegments(bytes)].find((s) => s.marker === SOS)!;
  const mid = sos.end + Math.floor((bytes.length - sos.end) / 2);
  for (let i = 0, s = 12345; i < 4096; i++) out[mid + i] = (s = (s * 1103515245 + 12345) >>> 0) % 255;
  return out;
}

export async function runImages(o: PartOptions): Promise<string> {
  const cfg = o.quick
    ? { wrkRounds: 2, wrkSeconds: 1, coldN: 3, stripRounds: 2, stripPer: 3, memJobs: 16, extra: 4, studyIters: 8, uploadN: 3, avifRounds: 1 }
    : { wrkRounds: 5, wrkSeconds: 3, coldN: 8, stripRounds: 4, stripPer: 4, memJobs: 32, extra: 6, studyIters: 30, uploadN: 8, avifRounds: 3 };
  const facts = await startFacts(o.command);
  const tools = await o.tools();
  const dir = tempDir("images");
  o.log("images: making images…");
  const servedImg = await photo(2000, 1500, { seed: 1 });
  const big = await Promise.all(Array.from({ length: cfg.coldN }, (_, i) => photo(4000, 3000, { seed: 100 + i, amp: 36, quality: 92 })));
  const extra = await Promise.all(Array.from({ length: cfg.extra }, (_, i) => photo(2000, 1500, { seed: 200 + i })));
  const study = await Promise.all(Array.from({ length: cfg.uploadN }, (_, i) => photo(2000, 1500, { seed: 300 + i })));
  const phone = await photo(4000, 3000, { seed: 400, amp: 36, quality: 92, phone: true });
  const file = (name: string, bytes: Uint8Array) => (writeFileSync(join(dir, name), bytes), join(dir, name));
  const damaged = { "truncated at 60 %": study[0]!.slice(0, Math.floor(study[0]!.length * 0.6)), "corrupted scan (4 KB overwritten)": corruptScan(study[0]!) };

  const server = await startAppServer({ label: "images", dataDir: join(dir, "data"), env: { TRUST_PROXY: "1" } });
  const floor = await floorProcess(serverScriptEnv());
  const { token } = await createAccount(server, "images");
  const group = (await admin<{ groups: { id: number; is_default: boolean; metadata: string }[] }>(server, "GET", "/api/admin/groups")).groups.find(
    (g) => g.is_default,
  )!;
  await Bun.sleep(1000);
  const idleFresh = treeMemory(server.pid);
  const up = async (bytes: Uint8Array) => uploadOnce(server, token, bytes);
  const served = await up(servedImg);
  const bigUp: Awaited<ReturnType<typeof up>>[] = [];
  for (const b of big) bigUp.push(await up(b));
  const extraUp: typeof bigUp = [];
  for (const b of extra) extraUp.push(await up(b));
  const stored = (u: { pathname: string }) => join(server.dataDir, "uploads", u.pathname);
  const cold = async (pathname: string, width: number, format: Fmt) => {
    const c0 = treeCpu(server.pid);
    const r = await get(`${server.base}/i/${pathname}?w=${width}&format=${format}`, fresh());
    await Bun.sleep(20); // the decode process's and the database's last ticks
    if (r.status !== 200 || r.type !== `image/${format}`)
      throw new Error(`cold ${pathname}?w=${width}&format=${format} → ${r.status} ${r.type}: the variant was not made`);
    return { ...r, cpu: cpuSince(c0, treeCpu(server.pid)) };
  };
  for (const format of ["webp", "avif"] as const) {
    await cold(extraUp[0]!.pathname, 160, format); // warm: a decode process started, sharp loaded on both sides
    await floor.ask({ op: "variant", file: stored(extraUp[0]!), width: 160, format });
  }

  // ---- 1. cached variant vs its original
  o.log("images 1: cached variant vs original (wrk)…");
  const wrk = new Wrk(tools.wrk);
  const origUrl = `${server.base}/i/${served.pathname}`;
  const varUrl = `${origUrl}?w=640&format=webp`;
  await get(varUrl, fresh());
  const [v, orig] = [await get(varUrl), await get(origUrl)];
  const targets = [
    { key: "orig200", label: "original", url: origUrl, headers: {} as Record<string, string>, file: orig.bytes },
    { key: "var200", label: "cached variant", url: varUrl, headers: {}, file: v.bytes },
    { key: "orig304", label: "original, If-None-Match (304)", url: origUrl, headers: { "If-None-Match": orig.etag }, file: 0 },
    { key: "var304", label: "cached variant, If-None-Match (304)", url: varUrl, headers: { "If-None-Match": v.etag }, file: 0 },
  ];
  const w1: Record<string, { rate: number; p50: number; p99: number; bytes: number; cpuUs: number; errors: number }[]> = {};
  for (const t of targets) await wrk.run({ url: t.url, connections: 16, seconds: 1, headers: t.headers });
  for (let round = 0; round < cfg.wrkRounds; round++) {
    for (const pair of [targets.slice(0, 2), targets.slice(2)]) {
      for (const t of round % 2 ? [...pair].reverse() : pair) {
        const c0 = cpuMs(server.pid);
        const r = await wrk.run({ url: t.url, connections: 16, seconds: cfg.wrkSeconds, headers: t.headers });
        await Bun.sleep(100);
        const accepted = r.requests - r.statusErrors;
        (w1[t.key] ??= []).push({
          rate: accepted / r.seconds,
          p50: r.p50ms,
          p99: r.p99ms,
          bytes: r.bytesPerRequest,
          errors: r.errors,
          cpuUs: ((cpuMs(server.pid) - c0) * 1000) / Math.max(1, accepted),
        });
      }
    }
  }
  const m1 = (k: string, f: "rate" | "p50" | "p99" | "bytes" | "cpuUs") => median(w1[k]!.map((x) => x[f]));
  // each round's pair ran back to back: the median of the per-round ratios (a busy spell hits both sides)
  const perRound = (a: string, b: string) => w1[a]!.map((x, i) => x.rate / w1[b]![i]!.rate);
  const [r200, r304] = [median(perRound("var200", "orig200")), median(perRound("var304", "orig304"))];

  // ---- 2. cold variants, server vs floor, interleaved image by image
  o.log(`images 2: cold 1280-px variants of ${cfg.coldN} 4000×3000 JPEGs, server vs floor…`);
  const rows2: string[][] = [];
  const coldRatio: Record<Fmt, number> = { webp: NaN, avif: NaN };
  for (const format of ["webp", "avif"] as const) {
    const s: { ms: number; cpu: number; decoder: number; bytes: number }[] = [];
    const f: { ms: number; cpu: number; bytes: number }[] = [];
    for (const [i, u] of bigUp.entries()) {
      for (const side of i % 2 ? ["floor", "server"] : ["server", "floor"]) {
        if (side === "floor") f.push(await floor.ask({ op: "variant", file: stored(u), width: 1280, format }));
        else {
          const r = await cold(u.pathname, 1280, format);
          s.push({ ms: r.ms, cpu: r.cpu.total, decoder: r.cpu.decoder, bytes: r.bytes });
        }
      }
    }
    const [sp, fp] = [median(s.map((x) => x.ms)), median(f.map((x) => x.ms))];
    coldRatio[format] = fp / sp;
    const total = (xs: { ms: number }[]) => xs.reduce((a, x) => a + x.ms, 0);
    rows2.push([
      `${format} (q${format === "webp" ? 80 : `50, effort ${AVIF_EFFORT}`}): server`,
      ms(sp),
      ms(
        percentile(
          s.map((x) => x.ms),
          100,
        ),
      ),
      `${((1000 * s.length) / total(s)).toFixed(2)}/s`,
      `${ms(median(s.map((x) => x.cpu)))} (decode process ${ms(median(s.map((x) => x.decoder)))})`,
      kB(median(s.map((x) => x.bytes))),
      "",
    ]);
    rows2.push([
      `${format}: floor (in-process encodeVariant)`,
      ms(fp),
      ms(
        percentile(
          f.map((x) => x.ms),
          100,
        ),
      ),
      `${((1000 * f.length) / total(f)).toFixed(2)}/s`,
      ms(median(f.map((x) => x.cpu))),
      kB(median(f.map((x) => x.bytes))),
      `**${ratio(fp / sp)}** (by totals ${ratio(total(f) / total(s))})`,
    ]);
  }

  // ---- 3. lossless strip: the default group's policy switched between rounds
  o.log("images 3: phone JPEG, strip_location vs keep…");
  const strip: Record<string, { cpu: number; ms: number; size: number }[]> = { keep: [], strip_location: [] };
  await up(phone);
  for (let round = 0; round < cfg.stripRounds; round++) {
    for (const policy of round % 2 ? ["strip_location", "keep"] : ["keep", "strip_location"]) {
      await admin(server, "PATCH", `/api/admin/groups/${group.id}`, { metadata: policy });
      for (let k = 0; k < cfg.stripPer; k++) {
        Bun.gc(true);
        const c0 = treeCpu(server.pid);
        const r = await up(phone);
        await Bun.sleep(30);
        strip[policy]!.push({ cpu: cpuSince(c0, treeCpu(server.pid)).total, ms: r.ms, size: Math.round(r.size * 1024) });
      }
    }
  }
  await admin(server, "PATCH", `/api/admin/groups/${group.id}`, { metadata: group.metadata });
  const stripAlone = await floor.ask<{ cpu: number }>({ op: "strip", file: file("phone.jpg", phone), iterations: 20 });
  const stripRatio = median(strip.strip_location!.map((x) => x.cpu)) / median(strip.keep!.map((x) => x.cpu));

  // ---- 4. memory while 16 clients ask for distinct cold variants (AVIF at large widths once each: the heaviest encodes)
  const combos = bigUp
    .flatMap((u, i) => [
      { u, width: 1920, format: "webp" as Fmt },
      { u, width: 640, format: "avif" as Fmt },
      ...(i === 0 ? [{ u, width: 1920, format: "avif" as Fmt }] : []),
      ...(extraUp[i + 1]
        ? [
            { u: extraUp[i + 1]!, width: 640, format: "avif" as Fmt },
            { u: extraUp[i + 1]!, width: 1920, format: "webp" as Fmt },
            { u: extraUp[i + 1]!, width: 1280, format: i === 0 ? ("avif" as Fmt) : ("webp" as Fmt) },
          ]
        : []),
    ])
    .slice(0, cfg.memJobs);
  o.log(`images 4: memory, 16 clients, ${combos.length} distinct cold variants…`);
  const idleBefore = treeMemory(server.pid);
  const sampler = new MemorySampler(50).watch(server.pid);
  const answers: { status: number; ms: number }[] = [];
  let next = 0;
  const t4 = performance.now();
  const c4 = treeCpu(server.pid);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let j = combos[next++]; j; j = combos[next++])
        answers.push(await get(`${server.base}/i/${j.u.pathname}?w=${j.width}&format=${j.format}`, fresh()).catch(() => ({ status: 0, ms: NaN })));
    }),
  );
  const burstS = (performance.now() - t4) / 1000;
  const burstCpu = cpuSince(c4, treeCpu(server.pid));
  await Bun.sleep(1000);
  sampler.stop();
  const burst = sampler.between(server.pid, t4);
  const peak = burst.reduce((a, b) => (b.pss.total > a.pss.total ? b : a));
  const after = sampler.between(server.pid).at(-1)!;
  const memRow = (label: string, s: { rss: number; pss: Record<string, number>; processes: number }, rss = s.rss) => [
    label,
    MB(rss),
    MB(s.pss.total!),
    MB(s.pss.server!),
    MB(s.pss.decoder!),
    MB(s.pss.database!),
    String(s.processes),
  ];
  const statuses = Object.entries(answers.reduce<Record<number, number>>((m, a) => ((m[a.status] = (m[a.status] ?? 0) + 1), m), {}))
    .map(([s, n]) => `${n}×${s === "0" ? "no answer" : s}`)
    .join(" ");

  // ---- 5. the thumbnail study: in the floor process, then the server's upload and first views
  o.log("images 5: thumbnail study…");
  const damagedFiles = Object.fromEntries(Object.entries(damaged).map(([label, bytes], i) => [label, file(`damaged-${i}.jpg`, bytes)]));
  const st = await floor.ask<{ cpu: Record<string, number>; wall: Record<string, number>; detect: Record<string, Record<string, string>> }>({
    op: "study",
    file: file("study.jpg", study[0]!),
    iterations: cfg.studyIters,
    damaged: damagedFiles,
  });
  const ups = [];
  for (const img of study) {
    Bun.gc(true);
    const c0 = treeCpu(server.pid);
    const r = await up(img);
    await Bun.sleep(30);
    ups.push({ ...cpuSince(c0, treeCpu(server.pid)), ms: r.ms, pathname: r.pathname });
  }
  const views: Record<string, number[]> = {};
  const add = (k: string, x: number) => (views[k] ??= []).push(x);
  for (const [i, u] of ups.entries()) {
    for (const width of i % 2 ? [640, 320] : [320, 640]) {
      const r = await cold(u.pathname, width, "webp");
      add(`cold${width}`, r.ms), add(`cpu${width}`, r.cpu.total), add(`bytes${width}`, r.bytes);
    }
  }
  for (let k = 0; k < 3; k++)
    for (const u of ups)
      for (const width of [320, 640, 0]) add(`cached${width}`, (await get(`${server.base}/i/${u.pathname}${width ? `?w=${width}&format=webp` : ""}`)).ms);
  const bad: string[][] = [];
  for (const [label, bytes] of Object.entries(damaged)) {
    bad.push(
      await up(bytes).then(
        (r) => [label, "200", `stored (${Math.round(r.size * 1024).toLocaleString("en-US")} B)`],
        (e: { status: number; text: string }) => [label, String(e.status), String(JSON.parse(e.text).message).slice(0, 120)],
      ),
    );
  }
  const uploadCpu = median(ups.map((x) => x.total));
  const saving = (op: string) => st.cpu.a! - st.cpu[op]!;
  const pct = (x: number) => `${((x / uploadCpu) * 100).toFixed(0)} %`;
  const opLabel: Record<string, string> = {
    a: "(a) today: full decode + 400-px WebP thumbnail",
    b: "(b) full decode, no thumbnail (`.raw().toBuffer()`)",
    c: "(c) header only (`metadata()`)",
    d: '(d) shrink-on-load decode to 400 px (`.resize(400,400,{fit:"inside"}).raw()`)',
  };
  const word = (label: string, op: string) => (st.detect[label]![op]!.startsWith("rejected") ? "rejects" : "accepts");
  const detectLine = (label: string) =>
    Object.keys(opLabel)
      .map((op) => `(${op}) ${word(label, op)}`)
      .join(", ");
  await server.stop();

  // ---- 6. AVIF settings: each effort against WebP, in the floor process
  o.log("images 6: AVIF settings…");
  const avifInputs = [
    { label: "camera-like 1600×1200 JPEG (generated)", file: file("camera.jpg", await cameraLikePhoto(1600, 1200, 7)) },
    {
      label: "noise-textured 1600×1200 JPEG (generated, as in the cells above; a worst case for AVIF)",
      file: file("noisy.jpg", await photo(1600, 1200, { seed: 5 })),
    },
  ];
  const avif: string[] = [];
  for (const input of avifInputs) {
    const r = await floor.ask<{
      width: number;
      height: number;
      rows: { encoder: string; effort: number | null; cpuMs: number; wallMs: number; bytes: number; psnr: number; ssim: number }[];
    }>({ op: "avif", file: input.file, rounds: cfg.avifRounds, efforts: [0, 1, 2, 3, 4] });
    const webp = r.rows.find((x) => x.effort === null)!;
    const used = r.rows.find((x) => x.effort === AVIF_EFFORT)!;
    const table = markdownTable(
      ["encoder", "CPU (median)", "wall", "bytes", "PSNR dB", "SSIM (luma)", "CPU ÷ WebP"],
      r.rows.map((x) => [
        x.effort === AVIF_EFFORT ? `**${x.encoder}** (in use)` : x.encoder,
        ms(x.cpuMs),
        ms(x.wallMs),
        kB(x.bytes),
        x.psnr.toFixed(2),
        x.ssim.toFixed(4),
        ratio(x.cpuMs / webp.cpuMs),
      ]),
    );
    avif.push(
      `**${input.label}**, full-size variant ${r.width}×${r.height}:\n\n${table}\n\n- Target (a cold AVIF variant of a 2 MP photo ≤ 1500 ms of CPU and ≤ 2× the WebP variant's): effort ${AVIF_EFFORT}: ${ms(used.cpuMs)} of CPU (${used.cpuMs <= 1500 ? "**met**" : "**missed**"}), ${ratio(used.cpuMs / webp.cpuMs)} WebP's (${used.cpuMs <= 2 * webp.cpuMs ? "**met**" : "**missed**"}).`,
    );
  }

  return render("images", {
    facts: facts.facts([
      [
        "server",
        `\`${serverCommand("TRUST_PROXY=1 ")}\`, embedded default, fresh DATA_DIR, local strategy; default group's metadata policy \`${group.metadata}\``,
      ],
    ]),
    servedKb: kB(servedImg.byteLength),
    wrkSeconds: cfg.wrkSeconds,
    wrkRounds: cfg.wrkRounds,
    table1: markdownTable(
      ["GET", "req/s", "p50", "p99", "bytes/answer (headers included)", "file", "server CPU/answer", "req/s per round"],
      targets.map((t) => [
        t.label,
        fmt(m1(t.key, "rate")),
        ms(m1(t.key, "p50")),
        ms(m1(t.key, "p99")),
        fmt(m1(t.key, "bytes")),
        t.file ? kB(t.file) : "–",
        `${fmt(m1(t.key, "cpuUs"))} µs`,
        w1[t.key]!.map((x) => fmt(x.rate)).join(" · ") + (w1[t.key]!.some((x) => x.errors) ? " (! errors)" : ""),
      ]),
    ),
    ratio200: ratio(r200),
    ratio304: ratio(r304),
    rounds200: perRound("var200", "orig200").map(ratio).join(", "),
    rounds304: perRound("var304", "orig304").map(ratio).join(", "),
    verdict200: atLeast(r200, 0.9),
    verdict304: atLeast(r304, 0.9),
    coldN: cfg.coldN,
    bigMb: (median(big.map((b) => b.byteLength)) / 1048576).toFixed(2),
    effort: AVIF_EFFORT,
    table2: markdownTable(["1280-px variant", "p50", "max", "rate (sequential)", "CPU/generation (p50)", "output", "floor time ÷ server time (p50)"], rows2),
    coldWebp: atLeast(coldRatio.webp, 0.8),
    coldAvif: atLeast(coldRatio.avif, 0.8),
    phoneBytes: phone.byteLength.toLocaleString("en-US"),
    stripRounds: cfg.stripRounds,
    stripPer: cfg.stripPer,
    table3: markdownTable(
      ["policy", "CPU/upload (median)", "CPU/upload, each", "wall p50", "stored size"],
      Object.entries(strip).map(([p, xs]) => [
        p,
        ms(median(xs.map((x) => x.cpu))),
        xs.map((x) => fmt(x.cpu)).join(" · "),
        ms(median(xs.map((x) => x.ms))),
        `${xs[0]!.size.toLocaleString("en-US")} B`,
      ]),
    ),
    stripRatio: ratio(stripRatio),
    stripVerdict: atMost(stripRatio, 1.15),
    stripAlone: ms(stripAlone.cpu),
    stripSaved: (strip.keep![0]!.size - strip.strip_location![0]!.size).toLocaleString("en-US"),
    jobs: combos.length,
    answers: `${statuses} in ${burstS.toFixed(1)} s (p50 ${ms(median(answers.map((a) => a.ms)))}, max ${ms(Math.max(...answers.map((a) => a.ms).filter(Number.isFinite)))})`,
    burstCpu: `${fmt(burstCpu.total / 1000)} s of CPU in the tree (decode processes ${fmt(burstCpu.decoder / 1000)} s)`,
    table4: markdownTable(
      ["moment", "server RSS", "tree PSS", "server PSS", "decode processes PSS", "database PSS", "processes"],
      [
        memRow("idle, fresh server (no decode process yet)", idleFresh),
        memRow("idle before the burst (decode processes alive)", idleBefore),
        memRow("peak during the burst (server RSS: its own peak)", peak, Math.max(...burst.map((s) => s.rss))),
        memRow("1 s after the burst", after),
      ],
    ),
    peakMb: MB(peak.pss.total),
    studyKb: kB(study[0]!.byteLength),
    studyIters: cfg.studyIters,
    table5: markdownTable(
      ["decode", "CPU (median)", "wall (median)", "saving vs (a) per upload", "JPEG truncated at 60 %", "scan corrupted (4 KB in the middle)"],
      Object.entries(opLabel).map(([op, label]) => [
        label,
        ms(st.cpu[op]!),
        ms(st.wall[op]!),
        op === "a" ? "–" : `${ms(saving(op))} (${pct(saving(op))} of the upload)`,
        st.detect["truncated at 60 %"]![op]!,
        st.detect["corrupted scan (4 KB overwritten)"]![op]!,
      ]),
    ),
    uploadN: cfg.uploadN,
    table5b: markdownTable(
      ["server", "p50 / median", "CPU", "size / wall"],
      [
        [
          "upload today (server tree CPU, median)",
          ms(uploadCpu),
          `decode process ${ms(median(ups.map((x) => x.decoder)))}`,
          `wall p50 ${ms(median(ups.map((x) => x.ms)))}`,
        ],
        ...[320, 640].map((w) => [
          `first view, cold \`?w=${w}&format=webp\``,
          ms(median(views[`cold${w}`]!)),
          `CPU ${ms(median(views[`cpu${w}`]!))}`,
          kB(median(views[`bytes${w}`]!)),
        ]),
        ...[320, 640].map((w) => [`later views, cached \`?w=${w}&format=webp\``, ms(median(views[`cached${w}`]!)), "", ""]),
        ["the original (~1 MB), for scale", ms(median(views.cached0!)), "", ""],
      ],
    ),
    table5c: markdownTable(["file", "status", "answer"], bad, true),
    uploadCpu: ms(uploadCpu),
    decodeA: ms(st.cpu.a!),
    savingD: `${ms(saving("d"))} (${pct(saving("d"))})`,
    savingB: `${ms(saving("b"))} (${pct(saving("b"))})`,
    savingC: `${ms(saving("c"))} (${pct(saving("c"))})`,
    detectTruncated: detectLine("truncated at 60 %"),
    detectCorrupted: detectLine("corrupted scan (4 KB overwritten)"),
    firstViews: `${ms(median(views.cold320!))} (320 px) / ${ms(median(views.cold640!))} (640 px) at p50 against ${ms(median(views.cached320!))} / ${ms(median(views.cached640!))} cached, and ${ms(median(views.cpu320!))} / ${ms(median(views.cpu640!))}`,
    avifRounds: cfg.avifRounds,
    avif: avif.join("\n\n"),
  });
}
