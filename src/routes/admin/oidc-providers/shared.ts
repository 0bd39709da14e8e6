import { z } from "@hono/zod-openapi";
import type { OidcProvider } from "../../../db/repositories/oidc.ts";
import { dateTime, envelope } from "../../../http/schemas.ts";
import { formatDateTime } from "../../../http/time.ts";
import { INT4_MAX } from "../../../http/validation.ts";
import { issuerProblem } from "../../../services/oidc/providers.ts";
import { redirectUriOf } from "../../../services/oidc/client.ts";

const claimName = (description: string, example: string) =>
  z
    .string()
    .trim()
    .regex(/^[\w.:/-]{1,100}$/, "1–100 letters, digits, '_', '.', ':', '/' or '-'")
    .openapi({ description, example });

const noControl = (s: string) => !/\p{Cc}/u.test(s);

/** The fields an administrator gives; the create route requires some of them. */
export const OidcProviderFields = z.object({
  slug: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,31}$/, "1–32 lower-case letters, digits or '-', starting with a letter or digit")
    .openapi({
      description: "Names the provider in its callback, BASE_URL/user/oidc/<slug>/callback (the redirect URI to register at the provider)",
      example: "authentik",
    }),
  label: z
    .string()
    .trim()
    .min(1)
    .max(60)
    .refine(noControl, "no control characters")
    .openapi({ description: "The sign-in button's text", example: "Sign in with Authentik" }),
  issuer: z
    .string()
    .trim()
    .max(500)
    .superRefine((value, ctx) => {
      const problem = issuerProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .openapi({
      description: "The issuer URL; its /.well-known/openid-configuration is read (https; plain http only on loopback)",
      example: "https://auth.example.com/application/o/images/",
    }),
  client_id: z
    .string()
    .trim()
    .min(1)
    .max(300)
    .refine(noControl, "no control characters")
    .openapi({ description: "The client id registered at the provider", example: "image-host" }),
  client_secret: z.string().max(1000).refine(noControl, "no control characters").openapi({
    description: "The client secret; stored sealed, never answered (`client_secret_set` says whether one is). Empty: a public client (PKCE only)",
    example: "s3cr3t",
  }),
  scopes: z
    .string()
    .trim()
    .max(500)
    .regex(/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/, "scopes separated by single spaces")
    .refine((s) => s.split(" ").includes("openid"), "the scopes must include openid")
    .openapi({ description: "The scopes asked for, separated by spaces; must include openid", example: "openid profile email" }),
  username_claim: claimName("The claim that gives the username of a provisioned account", "preferred_username"),
  email_claim: claimName("The claim that gives the email", "email"),
  groups_claim: claimName(
    "The claim listing the person's groups; a dotted name reads a nested claim (realm_access.roles); null: no role or group is taken from the provider",
    "groups",
  ).nullable(),
  admin_group: z.string().trim().min(1).max(200).nullable().openapi({
    description:
      "With groups_claim: members of this provider group are administrators here, everyone else signing in through it a user; null: the role is left alone",
    example: "image-host-admins",
  }),
  group_map: z
    .array(
      z.object({
        value: z.string().trim().min(1).max(200).openapi({ example: "photographers" }),
        group_id: z.number().int().min(1).max(INT4_MAX).openapi({ example: 1 }),
      }),
    )
    .max(50)
    .openapi({
      description: "With groups_claim: the first entry whose value is among the person's groups puts the account in that group (existing, non-guest)",
    }),
  auto_provision: z.boolean().openapi({ description: "A person the site does not know yet gets a new account; false: a clear refusal" }),
  enabled: z.boolean().openapi({ description: "Offered on the sign-in page" }),
});

export const OidcProviderSchema = z
  .object({
    id: z.number().int().openapi({ example: 1 }),
    slug: z.string().openapi({ example: "authentik" }),
    label: z.string().openapi({ example: "Sign in with Authentik" }),
    issuer: z.string().openapi({ example: "https://auth.example.com/application/o/images/" }),
    client_id: z.string().openapi({ example: "image-host" }),
    client_secret_set: z.boolean().openapi({ description: "Whether a client secret is stored (it is never answered)" }),
    scopes: z.string().openapi({ example: "openid profile email" }),
    username_claim: z.string().openapi({ example: "preferred_username" }),
    email_claim: z.string().openapi({ example: "email" }),
    groups_claim: z.string().nullable().openapi({ example: "groups" }),
    admin_group: z.string().nullable().openapi({ example: "image-host-admins" }),
    group_map: z.array(z.object({ value: z.string(), group_id: z.number().int() })),
    auto_provision: z.boolean(),
    enabled: z.boolean(),
    redirect_uri: z
      .string()
      .openapi({ description: "The redirect URI to register at the provider", example: "https://img.example.com/user/oidc/authentik/callback" }),
    identities: z.number().int().openapi({ description: "Accounts linked to this provider", example: 3 }),
    created_at: dateTime,
  })
  .openapi("OidcProvider");

export const OidcProviderResponse = envelope(OidcProviderSchema, "OidcProviderResponse");

/** The API's fields as the service's. */
export function toInput(b: Partial<z.infer<typeof OidcProviderFields>>) {
  return {
    slug: b.slug,
    label: b.label,
    issuer: b.issuer,
    clientId: b.client_id,
    clientSecret: b.client_secret,
    scopes: b.scopes,
    usernameClaim: b.username_claim,
    emailClaim: b.email_claim,
    groupsClaim: b.groups_claim,
    adminGroup: b.admin_group,
    groupMap: b.group_map?.map((m) => ({ value: m.value, groupId: m.group_id })),
    autoProvision: b.auto_provision,
    enabled: b.enabled,
  };
}

export function toOutput(p: OidcProvider, baseUrl: string, identities: number): z.infer<typeof OidcProviderSchema> {
  return {
    id: p.id,
    slug: p.slug,
    label: p.label,
    issuer: p.issuer,
    client_id: p.clientId,
    client_secret_set: p.clientSecret !== "",
    scopes: p.scopes,
    username_claim: p.usernameClaim,
    email_claim: p.emailClaim,
    groups_claim: p.groupsClaim,
    admin_group: p.adminGroup,
    group_map: p.groupMap.map((m) => ({ value: m.value, group_id: m.groupId })),
    auto_provision: p.autoProvision,
    enabled: p.enabled,
    redirect_uri: redirectUriOf(baseUrl, p.slug),
    identities,
    created_at: formatDateTime(p.createdAt),
  };
}
