/** Messages of the integrations pages, in English. */
export default {} as const;
