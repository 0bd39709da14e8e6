/** `bytes=a-b`, `bytes=a-`, `bytes=-n` → [start, end] inclusive; null = serve whole; "unsatisfiable" = 416. */
export function parseRange(header: string, size: number): [number, number] | null | "unsatisfiable" {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null; // multiple or malformed ranges: ignore, serve whole
  let start: number;
  let end: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "unsatisfiable";
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== "" && Number(m[2]) < start) return null;
  }
  if (start >= size || size === 0) return "unsatisfiable";
  return [start, end];
}
