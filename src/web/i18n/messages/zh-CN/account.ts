import type en from "../en/account.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
