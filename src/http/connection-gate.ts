import { addressBucket } from "../services/address.ts";
import { bodyReadWhole } from "./multipart.ts";

interface ConnectionLimits {
  /** Requests one client address (an IPv6 /64) may have in progress at once. */
  perAddress: number;
  /** Requests the process has in progress at once, from everyone. */
  total: number;
}

/**
 * A refusal of a request whose body was not read to its end (refused before or while reading it: no credential,
 * too large, too slow) closes its connection. Otherwise Bun would go on receiving the rest to keep the connection
 * alive, and a sender trickling that rest would hold a descriptor that no bound counts any more. (Bun closes a
 * fast sender's connection in that case anyway, about 0.1 s later: a client still writing its body when it is
 * refused may see a reset instead of the answer either way.)
 */
function closeUnreadBody(request: Request, response: Response): Response {
  if (response.status >= 400 && request.body !== null && !bodyReadWhole(request)) {
    try {
      response.headers.set("connection", "close");
    } catch {
      // immutable headers: Bun still ends the exchange at its idle timeout
    }
  }
  return response;
}

type Handler<S> = (request: Request, server: S) => Response | Promise<Response>;

/**
 * Bounds the requests in progress per client address and in total, in front of everything (the app and the
 * object server), so that one address cannot hold the process's connections and file descriptors: a request
 * beyond a bound is answered at once — 429 for its address, 503 for the total — with `Connection: close`, so
 * its connection is closed instead of waiting on a body. Bun itself closes a connection whose headers have not
 * arrived within about 10 s and an idle keep-alive connection after `idleTimeout`; every body has a deadline.
 */
export class ConnectionGate {
  private readonly held = new Map<string, number>();
  private total = 0;
  refused = 0;

  constructor(private readonly limits: ConnectionLimits) {}

  wrap<S>(handler: Handler<S>, addressOf: (request: Request, server: S) => string): Handler<S> {
    return (request, server) => {
      const key = addressBucket(addressOf(request, server));
      const held = this.held.get(key) ?? 0;
      if (held >= this.limits.perAddress)
        return this.refuse(429, `Too many requests in progress from your address: at most ${this.limits.perAddress} at a time.`);
      if (this.total >= this.limits.total) return this.refuse(503, "The server is handling too many requests: retry in a few seconds.");
      this.held.set(key, held + 1);
      this.total++;
      const release = () => {
        this.total--;
        const left = (this.held.get(key) ?? 1) - 1;
        if (left > 0) this.held.set(key, left);
        else this.held.delete(key);
      };
      let answer: Response | Promise<Response>;
      try {
        answer = handler(request, server);
      } catch (e) {
        release();
        throw e;
      }
      if (answer instanceof Promise) {
        return answer.then(
          (response) => {
            release();
            return closeUnreadBody(request, response);
          },
          (e) => {
            release();
            throw e;
          },
        );
      }
      release();
      return closeUnreadBody(request, answer);
    };
  }

  /** Requests in progress now: from one address bucket, or in all. */
  inProgress(address?: string): number {
    return address === undefined ? this.total : (this.held.get(addressBucket(address)) ?? 0);
  }

  private refuse(status: 429 | 503, message: string): Response {
    this.refused++;
    return new Response(JSON.stringify({ status: false, message, data: null }), {
      status,
      headers: { "content-type": "application/json", "retry-after": "5", connection: "close" },
    });
  }
}
