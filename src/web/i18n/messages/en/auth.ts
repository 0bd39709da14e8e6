/** Messages of the auth pages, in English. */
export default {} as const;
