import type en from "../en/dashboard.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
