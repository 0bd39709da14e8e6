import type en from "../en/auth.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
