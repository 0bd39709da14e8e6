export const errorStatus = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  request_timeout: 408,
  unsupported_media_type: 415,
  validation: 422,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;
export type FieldErrors = Record<string, string[]>;

/** The one error type: its code decides the HTTP status, its message is shown to the caller. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly errors?: FieldErrors,
    /** Headers the answer carries (Retry-After). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
  get status() {
    return errorStatus[this.code];
  }
}

export const badRequest = (m: string) => new AppError("bad_request", m);
export const unauthorized = (m = "Unauthenticated.") => new AppError("unauthorized", m);
export const forbidden = (m: string) => new AppError("forbidden", m);
export const notFound = (m = "Not found.") => new AppError("not_found", m);
export const validationError = (errors: FieldErrors) => new AppError("validation", Object.values(errors)[0]?.[0] ?? "The given data was invalid.", errors);
