import type en from "../en/upload.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
