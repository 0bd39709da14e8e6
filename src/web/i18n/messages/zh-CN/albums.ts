import type en from "../en/albums.ts";
import type { Catalog } from "../types.ts";

export default {} satisfies Catalog<typeof en>;
