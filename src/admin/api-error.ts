/**
 * Errors of the management API: one JSON shape, `{"error": {"code", "message", "field"?}}`, where
 * `field` names the request field at fault so a console form can show the message beside it.
 */

/** Every error code with its HTTP status; the OpenAPI document's Error schema lists exactly these. */
export const API_ERROR_STATUS = {
  invalid_request: 400,
  invalid_credentials: 401,
  unauthenticated: 401,
  two_factor_required: 401,
  forbidden: 403,
  two_factor_enrolment_required: 403,
  csrf_failed: 403,
  signup_disabled: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  too_many_attempts: 429,
  unavailable: 503,
} as const;

export type ApiErrorCode = keyof typeof API_ERROR_STATUS;

export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;

  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly field?: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.status = API_ERROR_STATUS[code];
  }

  toJSON(): { error: { code: string; message: string; field?: string } } {
    return { error: { code: this.code, message: this.message, ...(this.field === undefined ? {} : { field: this.field }) } };
  }
}

/** A field that failed validation: 400 naming the field. */
export function invalid(field: string, message: string): ApiError {
  return new ApiError('invalid_request', message, field);
}

export function notFound(what: string): ApiError {
  return new ApiError('not_found', `${what} was not found.`);
}
