import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { formatDateTime, parseDateTime } from "../../src/http/time.ts";

/** Runs a describe block's tests in the time zone `tz` (Bun applies a change of process.env.TZ at once). */
function inTimeZone(tz: string) {
  const previous = process.env.TZ;
  beforeAll(() => {
    process.env.TZ = tz;
  });
  afterAll(() => {
    if (previous === undefined) delete process.env.TZ;
    else process.env.TZ = previous;
  });
}

const iso = (value: string) => parseDateTime(value)?.toISOString() ?? null;

// ISO 8601 with an offset names an instant: the server's time zone must not matter.
const isoRows: [input: string, instant: string | null][] = [
  ["2026-12-01T08:00:00Z", "2026-12-01T08:00:00.000Z"],
  ["2026-12-01T08:00:00+08:00", "2026-12-01T00:00:00.000Z"],
  ["2026-12-01T08:00:00+0800", "2026-12-01T00:00:00.000Z"],
  ["2026-12-01T08:00:00-05:30", "2026-12-01T13:30:00.000Z"],
  ["2026-12-01T08:00:00-0530", "2026-12-01T13:30:00.000Z"],
  ["2026-12-01T08:00:00+00:00", "2026-12-01T08:00:00.000Z"],
  ["2026-12-01T08:00:00-00:00", "2026-12-01T08:00:00.000Z"],
  ["2026-12-01T08:00:00+14:00", "2026-11-30T18:00:00.000Z"],
  ["2026-12-01T08:00:00-12:00", "2026-12-01T20:00:00.000Z"],
  ["2026-12-01T08:00:00+23:59", "2026-11-30T08:01:00.000Z"], // the largest offset RFC 3339's grammar allows
  ["2026-12-31T23:30:00-01:00", "2027-01-01T00:30:00.000Z"], // the offset carries into the next year
  ["2026-12-01T08:00Z", "2026-12-01T08:00:00.000Z"],
  ["2026-12-01T08:00+08:00", "2026-12-01T00:00:00.000Z"],
  ["2026-12-01T08:00:00.5Z", "2026-12-01T08:00:00.500Z"],
  ["2026-12-01T08:00:00.123Z", "2026-12-01T08:00:00.123Z"],
  ["2026-12-01T08:00:00.123456789+08:00", "2026-12-01T00:00:00.123Z"], // truncated to milliseconds
  ["2026-12-01T08:00:00.999999Z", "2026-12-01T08:00:00.999Z"],
  ["2026-12-01T08:00:00.57Z", "2026-12-01T08:00:00.570Z"],
  ["2026-12-01t08:00:00z", "2026-12-01T08:00:00.000Z"],
  ["  2026-12-01T08:00:00Z\n", "2026-12-01T08:00:00.000Z"],
  ["\t2026-12-01T08:00:00+08:00 ", "2026-12-01T00:00:00.000Z"],
  ["2028-02-29T12:00:00Z", "2028-02-29T12:00:00.000Z"], // leap day
  ["2000-02-29T12:00:00Z", "2000-02-29T12:00:00.000Z"], // divisible by 400: leap
  ["2026-12-31T23:59:59Z", "2026-12-31T23:59:59.000Z"],
  ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000Z"],
  ["0050-06-01T00:00:00Z", "0050-06-01T00:00:00.000Z"], // not read as 1950
  // impossible calendar dates and times: Date.parse would roll some of these over
  ["2026-02-30T10:00:00Z", null],
  ["2026-02-29T10:00:00Z", null],
  ["2100-02-29T10:00:00Z", null], // divisible by 100, not 400: no leap day
  ["2026-04-31T10:00:00+08:00", null],
  ["2026-13-01T10:00:00Z", null],
  ["2026-00-10T10:00:00Z", null],
  ["2026-01-00T10:00:00Z", null],
  ["2026-01-32T10:00:00Z", null],
  ["2026-01-01T24:00:00Z", null],
  ["2026-01-01T25:00:00Z", null],
  ["2026-01-01T10:60:00Z", null],
  ["2026-01-01T10:00:60Z", null], // leap seconds cannot be represented
  // out-of-range offsets
  ["2026-01-01T10:00:00+25:00", null],
  ["2026-01-01T10:00:00+24:00", null],
  ["2026-01-01T10:00:00+14:60", null],
  ["2026-01-01T10:00:00-0099", null],
  // not ISO 8601 with an offset
  ["2026-01-01T10:00:00+8", null],
  ["2026-01-01T10:00:00+08", null],
  ["2026-01-01T10:00:00+08:0", null],
  ["2026-01-01T10:00:00 +08:00", null],
  ["2026-01-01T10:00:00UTC", null],
  ["2026-01-01T10:00:00.Z", null],
  ["2026-01-01T10Z", null],
  ["2026-01-01Z", null],
  ["2026-01-01", null],
  ["20260101T100000Z", null],
  ["2026-1-01T10:00:00Z", null],
  ["+002026-01-01T10:00:00Z", null],
  ["2026-01-01 10:00:00Z", null],
  ["2026-01-01T10:00:00ZZ", null],
];

// Plain dates are wall-clock times in the server's zone; UTC+8 (no daylight saving) makes that visible.
const shanghaiRows: [input: string, instant: string | null][] = [
  ["2026-12-01 08:00:00", "2026-12-01T00:00:00.000Z"],
  ["2026-12-01 08:00", "2026-12-01T00:00:00.000Z"],
  ["2026-12-01T08:00:00", "2026-12-01T00:00:00.000Z"],
  ["2026-12-01T08:00", "2026-12-01T00:00:00.000Z"],
  ["2026-01-01 07:59:59", "2025-12-31T23:59:59.000Z"],
  ["  2026-12-01 08:00:00  ", "2026-12-01T00:00:00.000Z"],
  ["2028-02-29 10:00:00", "2028-02-29T02:00:00.000Z"], // leap day
  ["2000-02-29 10:00:00", "2000-02-29T02:00:00.000Z"],
  ["2026-12-31 23:59:59", "2026-12-31T15:59:59.000Z"],
  ["2026-01-01 00:00:00", "2025-12-31T16:00:00.000Z"],
  ["2026-02-30 10:00:00", null],
  ["2026-02-29 10:00:00", null],
  ["2100-02-29 10:00:00", null],
  ["2026-04-31 10:00", null],
  ["2026-13-01 10:00:00", null],
  ["2026-00-01 10:00:00", null],
  ["2026-01-00 10:00:00", null],
  ["2026-01-01 24:00:00", null],
  ["2026-01-01 25:00", null],
  ["2026-01-01 10:60", null],
  ["2026-01-01 10:00:60", null],
  ["2026-01-01 23:59:60", null],
  ["2026-01-01 10:00:00.5", null],
  ["2026-01-01  10:00:00", null],
  ["2026-01-01 1:00:00", null],
  ["2026-01-01 10", null],
  ["2026/01/01 10:00:00", null],
  ["01-01-2026 10:00:00", null],
];

const garbageRows: [input: string][] = [
  [""],
  ["   "],
  ["now"],
  ["tomorrow"],
  ["null"],
  ["1767261600"],
  ["1767261600000"],
  ["Thu, 01 Jan 2026 10:00:00 GMT"],
  ["January 1, 2026 10:00"],
  ["2026-01-01T10:00:00Z; DROP TABLE images"],
  ["２０２６-01-01 10:00:00"], // full-width digits
  ["2026-01-01 10:00:00\u0000"],
  ["x".repeat(10_000)],
];

describe("parseDateTime: ISO 8601 with an offset", () => {
  describe("in UTC", () => {
    inTimeZone("UTC");
    test.each(isoRows)("%p → %p", (input, instant) => {
      expect(iso(input)).toBe(instant);
    });
  });
  describe("in Asia/Shanghai (the server's zone does not change an instant)", () => {
    inTimeZone("Asia/Shanghai");
    test.each(isoRows)("%p → %p", (input, instant) => {
      expect(iso(input)).toBe(instant);
    });
  });
});

describe("parseDateTime: YYYY-MM-DD HH:MM[:SS] in the server's zone (Asia/Shanghai)", () => {
  inTimeZone("Asia/Shanghai");
  test.each(shanghaiRows)("%p → %p", (input, instant) => {
    expect(iso(input)).toBe(instant);
  });
});

describe("parseDateTime: local times around daylight saving (America/New_York)", () => {
  inTimeZone("America/New_York");
  const rows: [input: string, instant: string | null][] = [
    ["2026-01-15 12:00:00", "2026-01-15T17:00:00.000Z"], // EST, UTC-5
    ["2026-07-15 12:00:00", "2026-07-15T16:00:00.000Z"], // EDT, UTC-4
    ["2026-03-08 01:59:59", "2026-03-08T06:59:59.000Z"],
    ["2026-03-08 02:30:00", null], // skipped by the spring change: that wall-clock time never happens
    ["2026-03-08 03:00:00", "2026-03-08T07:00:00.000Z"],
    ["2026-11-01 01:30:00", "2026-11-01T05:30:00.000Z"], // repeated by the autumn change: the earlier one
    ["2026-11-01 02:30:00", "2026-11-01T07:30:00.000Z"],
  ];
  test.each(rows)("%p → %p", (input, instant) => {
    expect(iso(input)).toBe(instant);
  });
});

describe("parseDateTime: garbage", () => {
  for (const tz of ["UTC", "Asia/Shanghai"]) {
    describe(tz, () => {
      inTimeZone(tz);
      test.each(garbageRows)("%p → null", (input) => {
        expect(parseDateTime(input)).toBeNull();
      });
    });
  }
});

describe("formatDateTime (Asia/Shanghai)", () => {
  inTimeZone("Asia/Shanghai");
  const rows: [instant: string, formatted: string][] = [
    ["2026-12-01T00:00:00.000Z", "2026-12-01 08:00:00"],
    ["2026-12-31T16:00:00.000Z", "2027-01-01 00:00:00"], // the local date, not the UTC one
    ["2026-01-02T03:04:05.000Z", "2026-01-02 11:04:05"], // zero-padded
    ["2026-01-02T03:04:05.999Z", "2026-01-02 11:04:05"], // milliseconds truncated, not rounded
    ["2028-02-28T16:00:00.000Z", "2028-02-29 00:00:00"],
  ];
  test.each(rows)("%p → %p", (instant, formatted) => {
    expect(formatDateTime(new Date(instant))).toBe(formatted);
  });
});

describe("formatDateTime undoes parseDateTime for the contract's format", () => {
  // 0050: a four-digit year both ways (the Date constructor alone would read it as 1950)
  const inputs = ["2026-12-01 08:00:00", "2028-02-29 23:59:59", "2026-01-01 00:00:00", "0050-06-01 08:00:00"];
  for (const tz of ["UTC", "Asia/Shanghai", "America/New_York"]) {
    describe(tz, () => {
      inTimeZone(tz);
      test.each(inputs.map((s) => [s]))("%p", (input) => {
        expect(formatDateTime(parseDateTime(input)!)).toBe(input);
      });
    });
  }
});
