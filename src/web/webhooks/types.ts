/** What the webhook pages show and whom they ask: shared by the user's pages and the administrator's. */
import type { Context, MiddlewareHandler } from "hono";
import type { Child } from "hono/jsx";
import type { EventType } from "../../db/schema.ts";
import type { Delivery, Endpoint, EndpointInput } from "../../services/webhooks.ts";
import type { Layout } from "../components/index.ts";
import type { SignedIn, SignedInEnv } from "../session.ts";

/** What the pages show of an endpoint (a service row has it; the admin page reads it from the admin API). */
export type EndpointView = Pick<Endpoint, "id" | "url" | "description" | "events" | "enabled" | "disabledReason" | "disabledAt" | "failingSince" | "createdAt">;
/** What the delivery log shows of a delivery. */
export type DeliveryView = Pick<
  Delivery,
  "id" | "eventType" | "status" | "attempts" | "lastStatusCode" | "lastLatencyMs" | "lastError" | "lastAttemptAt" | "nextAttemptAt" | "createdAt"
>;

/**
 * Where the pages read and change endpoints. A refusal is thrown as an AppError: 404 for an endpoint or delivery
 * not in scope, 422 with field errors (url, description, events), 400 for the whole form (the cap).
 */
export interface WebhookBackend {
  list(c: Context<SignedInEnv>): Promise<EndpointView[]>;
  /** The answer carries the secret, shown this once. */
  create(c: Context<SignedInEnv>, input: EndpointInput): Promise<{ endpoint: EndpointView; secret: string }>;
  find(c: Context<SignedInEnv>, id: number): Promise<EndpointView>;
  update(c: Context<SignedInEnv>, id: number, change: Partial<EndpointInput> & { enabled?: boolean }): Promise<EndpointView>;
  rotate(c: Context<SignedInEnv>, id: number): Promise<{ endpoint: EndpointView; secret: string }>;
  /** A webhook.test event to this endpoint only. */
  test(c: Context<SignedInEnv>, id: number): Promise<void>;
  /** A page of the log, newest first, and the `before` of the next page (null when there are no older deliveries). */
  deliveries(c: Context<SignedInEnv>, id: number, before?: number): Promise<{ deliveries: DeliveryView[]; older: number | null }>;
  /** Sends a delivered or failed delivery again (404 when there is none, or it is still pending). */
  resend(c: Context<SignedInEnv>, id: number, deliveryId: number): Promise<void>;
  /** Sends again every failed delivery of events since `since` (400 while the endpoint is off); answers how many. */
  resendFailed(c: Context<SignedInEnv>, id: number, since: Date): Promise<number>;
  remove(c: Context<SignedInEnv>, id: number): Promise<void>;
}

/** Where the pages live and what differs between the user's and the site's. */
export interface WebhookArea {
  /** The list page's path, e.g. /user/webhooks. */
  base: string;
  backend: WebhookBackend;
  events: EventType[];
  /** The most endpoints this scope may hold. */
  max: number;
  /** Whose events: the account's own ("user") or every account's ("site"); the pages' sentences say so. */
  scope: "user" | "site";
  gate: MiddlewareHandler<SignedInEnv>;
  /** The page's frame. */
  frame: (props: { title: string; signedIn: SignedIn; children: Child }) => ReturnType<typeof Layout>;
}

export type FieldName = "url" | "description" | "events";
export interface FormState {
  values: { url: string; description: string; events: string[] };
  errors: Partial<Record<FieldName, string>>;
  refusal?: string;
}

export interface Secret {
  secret: string;
  endpoint: EndpointView;
  rotated: boolean;
}
