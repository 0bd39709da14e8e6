/** Messages of the tokens pages, in English. */
export default {} as const;
