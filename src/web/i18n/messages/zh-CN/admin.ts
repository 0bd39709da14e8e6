import type en from "../en/admin.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
