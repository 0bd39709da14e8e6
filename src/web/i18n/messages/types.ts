/** A catalog of another language: every key of the English one, and no other. */
export type Catalog<T> = { [K in keyof T]: string };
