/** Messages of the upload pages, in English. */
export default {} as const;
