import type en from "../en/tokens.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
