/** The little of oidc-provider (which ships no types) the sign-in tests use. */
declare module "oidc-provider" {
  import type { Server } from "node:http";
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    listen(port: number, hostname?: string): Server;
  }
}
