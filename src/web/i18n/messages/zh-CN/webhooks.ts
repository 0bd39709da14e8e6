import type en from "../en/webhooks.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
