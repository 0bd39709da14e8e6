/**
 * playwright-core run in-process under Bun now and then receives a message naming an object its client never bound
 * ("Object with guid response@… was not bound in the connection"), most often a network response. Its
 * connection throws that from inside a `setImmediate`, so the error is uncaught: whichever test runs at that moment
 * fails, on a step that has nothing to do with it, and the call the message answered never settles.
 *
 * This guard keeps the failure where it belongs. An answer to a call that names a lost object rejects that call
 * with the error (the test sees it on its own step, as it would see any failed step). An event naming a lost object
 * (a `response` or `requestFinished` notice no test here waits on) is dropped and counted; the count is printed
 * when the suite's browser closes. Any other error of the connection is thrown as before.
 */
import type { BrowserType } from "playwright-core";

const LOST = /was not bound in the connection/;

interface Message {
  id?: number;
  guid?: string;
  method?: string;
}
interface ClientConnection {
  dispatch(message: Message): void;
  _callbacks: Map<number, { reject(e: Error): void }>;
  __lostBindings?: string[];
}

/**
 * Guards the client connection behind `chromium` (one per process; guarded once) and returns what a suite calls when
 * its browser closes: it prints how many events were dropped since the guard was asked for, if any.
 */
export function guardLostBindings(chromium: BrowserType): (suite: string) => void {
  const lost = guard(chromium);
  const from = lost.length;
  return (suite) => {
    const dropped = lost.slice(from);
    if (dropped.length > 0)
      console.warn(`${suite}: playwright-core named ${dropped.length} unbound object(s) in events, dropped: ${dropped.slice(0, 3).join("; ")}`);
  };
}

function guard(chromium: BrowserType): string[] {
  const connection = (chromium as unknown as { _connection?: ClientConnection })._connection;
  if (!connection || typeof connection.dispatch !== "function" || !(connection._callbacks instanceof Map)) return [];
  if (connection.__lostBindings) return connection.__lostBindings;
  const lost: string[] = [];
  connection.__lostBindings = lost;
  const dispatch = connection.dispatch.bind(connection);
  connection.dispatch = (message: Message) => {
    const callback = message.id ? connection._callbacks.get(message.id) : undefined;
    try {
      dispatch(message);
    } catch (e) {
      if (!LOST.test(String(e))) throw e;
      if (callback) callback.reject(e as Error);
      else lost.push(`${message.method ?? "?"} on ${message.guid ?? "?"}: ${String(e).slice(0, 160)}`);
    }
  };
  return lost;
}
