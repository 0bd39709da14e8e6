/** Messages of the admin pages, in English. */
export default {} as const;
