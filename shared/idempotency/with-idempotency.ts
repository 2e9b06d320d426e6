import type { ApiRequest } from '../http/request.js';
import type { ApiResponse } from '../http/response.js';
import { idempotency } from '../services.js';
import type { ReplayOptions } from './service.js';

/**
 * Runs a POST's operation at most once per Idempotency-Key (when the request
 * has one). `meaning` is what the request asks for, already parsed: two
 * requests that mean the same thing are the same request.
 */
export function withIdempotency(
  request: ApiRequest,
  meaning: unknown,
  operation: () => Promise<ApiResponse>,
  options?: ReplayOptions,
): Promise<ApiResponse> {
  return idempotency().run(request, meaning, operation, options);
}
