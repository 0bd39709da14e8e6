/** Messages of the dashboard pages, in English. */
export default {} as const;
