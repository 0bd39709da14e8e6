/** Messages of the albums pages, in English. */
export default {} as const;
