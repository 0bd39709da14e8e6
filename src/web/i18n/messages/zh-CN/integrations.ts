import type en from "../en/integrations.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
