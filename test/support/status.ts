import { expect } from "bun:test";

/**
 * Status assertions that say why they failed: the message of a failing `expect(status, message)` carries the
 * response body (JSON or text), or, for a binary answer, its headers and size.
 */

/** An answer whose body has already been read: what `ctx.json` and `ctx.upload` return. */
export interface ReadAnswer<T = any> {
  status: number;
  body: T;
  headers?: Headers;
}

/** What the generated clients (openapi-fetch, @hey-api) return: the body is already parsed into data or error. */
export interface ClientAnswer {
  response: Response;
  data?: unknown;
  error?: unknown;
}

const LIMIT = 2000;
const clip = (text: string) => (text.length > LIMIT ? `${text.slice(0, LIMIT)}… (${text.length} chars)` : text);
function headerList(headers: Headers): string {
  const all: Record<string, string> = {};
  headers.forEach((value, name) => {
    all[name] = value;
  });
  return JSON.stringify(all);
}

function describeBody(body: unknown): string {
  if (body instanceof Uint8Array) return `${body.byteLength} bytes`;
  return clip(typeof body === "string" ? body : JSON.stringify(body));
}

/** One line saying what an answer was: its status and its body. */
export function describeAnswer(answer: ReadAnswer | ClientAnswer): string {
  if ("response" in answer) return `answered ${answer.response.status}: ${describeBody(answer.error ?? answer.data)}`;
  return `answered ${answer.status}: ${describeBody(answer.body)}`;
}

/** The failure message for a list of answers (concurrent requests). */
export function describeAnswers(answers: (ReadAnswer | ClientAnswer)[]): string {
  return answers.map((a, i) => `#${i} ${describeAnswer(a)}`).join("\n");
}

/** Reads a response body once: JSON parsed, text as a string, anything else as bytes. */
async function readBody(res: Response): Promise<unknown> {
  const type = res.headers.get("content-type") ?? "";
  if (type.includes("json")) {
    const text = await res.text();
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  if (type.startsWith("text/")) return res.text();
  return new Uint8Array(await res.arrayBuffer());
}

async function expectResponse(res: Response, status: number): Promise<unknown> {
  const body = await readBody(res);
  const what = body instanceof Uint8Array ? `${describeBody(body)}, headers ${headerList(res.headers)}` : describeBody(body);
  expect(res.status, `answered ${res.status}: ${what}`).toBe(status);
  return body;
}

/**
 * Asserts an answer's status; a failure prints the body (a binary answer: its headers and size).
 * A Response is read once and its parsed body returned (JSON parsed, text as a string, anything else as
 * a Uint8Array): await it, and use the returned value rather than the Response's body. A read answer
 * returns its body, a generated client's answer its data or error.
 *
 * A Response has status, body and headers too: `ok?: never` keeps it out of the read answer's (synchronous)
 * overload, which comes first so that a generic call written inline (`expectStatus(await ctx.json(...), 200)`)
 * infers its body type from ReadAnswer rather than from Response.
 */
export function expectStatus<T>(answer: ReadAnswer<T> & { ok?: never }, status: number): T;
export function expectStatus(answer: Response, status: number): Promise<any>;
export function expectStatus<A extends ClientAnswer>(answer: A, status: number): A["data"] | A["error"];
export function expectStatus(answer: Response | ReadAnswer | ClientAnswer, status: number): unknown {
  if (answer instanceof Response) return expectResponse(answer, status);
  if ("response" in answer) {
    expect(answer.response.status, describeAnswer(answer)).toBe(status);
    return answer.error ?? answer.data;
  }
  expect(answer.status, describeAnswer(answer)).toBe(status);
  return answer.body;
}

/** Asserts the statuses of several answers, in order; a failure prints every body. */
export function expectStatuses(answers: ReadAnswer[], statuses: number[]): void {
  expect(
    answers.map((a) => a.status),
    describeAnswers(answers),
  ).toEqual(statuses);
}
