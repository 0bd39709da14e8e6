import { describe, expect, test } from "bun:test";
import { parseRange } from "../../src/http/range.ts";

const WHOLE = null; // ignore the header: 200 with the whole body
const UNSAT = "unsatisfiable"; // 416
const huge = "9".repeat(400); // parses to Infinity

describe("parseRange", () => {
  const rows: [header: string, size: number, expected: ReturnType<typeof parseRange>][] = [
    ["bytes=0-99", 1000, [0, 99]],
    ["bytes=0-0", 1000, [0, 0]],
    ["bytes=1-1", 1000, [1, 1]],
    ["bytes=0-999", 1000, [0, 999]],
    ["bytes=999-999", 1000, [999, 999]],
    ["bytes=00-09", 1000, [0, 9]],
    // open-ended
    ["bytes=100-", 1000, [100, 999]],
    ["bytes=0-", 1000, [0, 999]],
    ["bytes=999-", 1000, [999, 999]],
    // suffix
    ["bytes=-500", 1000, [500, 999]],
    ["bytes=-1", 1000, [999, 999]],
    ["bytes=-1000", 1000, [0, 999]],
    ["bytes=-5000", 1000, [0, 999]], // longer than the file: the whole file, as a range
    ["bytes=-0", 1000, UNSAT],
    ["bytes=-000", 1000, UNSAT],
    // start at or beyond the end
    ["bytes=1000-", 1000, UNSAT],
    ["bytes=1000-1999", 1000, UNSAT],
    ["bytes=5000-6000", 1000, UNSAT],
    // end beyond the end: clamped
    ["bytes=900-5000", 1000, [900, 999]],
    ["bytes=0-1000", 1000, [0, 999]],
    // end before start: an invalid range-spec, so the header is ignored
    ["bytes=100-99", 1000, WHOLE],
    ["bytes=5-1", 1000, WHOLE],
    ["bytes=2000-1000", 1000, WHOLE],
    // several ranges: served whole (a server may ignore Range; no multipart/byteranges)
    ["bytes=0-1,5-6", 1000, WHOLE],
    ["bytes=0-1, 5-6", 1000, WHOLE],
    ["bytes=-1,0-", 1000, WHOLE],
    ["bytes=0-1,", 1000, WHOLE],
    // other units and malformed headers
    ["items=0-1", 1000, WHOLE],
    ["Bytes=0-1", 1000, WHOLE], // unit names are case-insensitive, but ignoring a Range is always allowed
    ["bytes 0-1", 1000, WHOLE],
    ["bytes=", 1000, WHOLE],
    ["bytes=-", 1000, WHOLE],
    ["bytes=0", 1000, WHOLE],
    ["bytes=a-b", 1000, WHOLE],
    ["bytes=0x10-", 1000, WHOLE],
    ["bytes=1.5-2", 1000, WHOLE],
    ["bytes=+1-2", 1000, WHOLE],
    ["bytes=--1", 1000, WHOLE],
    ["bytes=0-1-2", 1000, WHOLE],
    ["", 1000, WHOLE],
    ["0-99", 1000, WHOLE],
    // whitespace
    ["  bytes=0-99  ", 1000, [0, 99]],
    ["bytes=0-99\t", 1000, [0, 99]],
    ["bytes= 0-99", 1000, WHOLE],
    ["bytes=0 -99", 1000, WHOLE],
    ["bytes =0-99", 1000, WHOLE],
    // zero-size file: nothing can be selected
    ["bytes=0-", 0, UNSAT],
    ["bytes=0-0", 0, UNSAT],
    ["bytes=0-99", 0, UNSAT],
    ["bytes=-5", 0, UNSAT],
    ["bytes=-0", 0, UNSAT],
    ["bytes=5-1", 0, WHOLE],
    ["bytes=0-1,2-3", 0, WHOLE],
    // one-byte file
    ["bytes=0-", 1, [0, 0]],
    ["bytes=-1", 1, [0, 0]],
    ["bytes=1-", 1, UNSAT],
    // huge numbers
    ["bytes=99999999999999999999-", 1000, UNSAT],
    ["bytes=0-99999999999999999999", 1000, [0, 999]],
    ["bytes=-99999999999999999999", 1000, [0, 999]],
    [`bytes=${huge}-`, 1000, UNSAT],
    [`bytes=0-${huge}`, 1000, [0, 999]],
    [`bytes=-${huge}`, 1000, [0, 999]],
    [`bytes=${huge}-1`, 1000, WHOLE],
    ["bytes=9007199254740991-", 9007199254740992, [9007199254740991, 9007199254740991]],
    ["bytes=4294967296-4294967395", 5_000_000_000, [4294967296, 4294967395]], // past 32 bits
  ];
  test.each(rows)("%p of %p bytes → %p", (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });
});
