/** Messages of the account pages, in English. */
export default {} as const;
