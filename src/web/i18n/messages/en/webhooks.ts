/** Messages of the webhooks pages, in English. */
export default {} as const;
