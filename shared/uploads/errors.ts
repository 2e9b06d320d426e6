import { ApiError, parameterInvalid } from '../http/errors.js';
import type { SessionFailure } from './model.js';

/** Errors of the upload sessions; their shape is shared/http/errors.ts's. */
const sessionRefused = (code: string, message: string, param?: string) => new ApiError(400, 'invalid_request_error', code, message, param);

export const sessionExpired = (id: string) => sessionRefused('upload_session_expired', `Upload session ${id} has expired; start a new one`);

export const sessionCompleted = (id: string) =>
  sessionRefused('upload_session_completed', `Upload session ${id} is already completed; its file is an attachment now`);

/** A failed session answers every later call with the reason it failed. */
export const sessionFailed = (failure: SessionFailure) => sessionRefused(failure.code, failure.message, failure.param);

export const sizeMismatch = (declared: number, actual: number): SessionFailure => ({
  code: 'file_size_mismatch',
  message: `The uploaded parts hold ${actual} bytes, not the declared file_size of ${declared}; the file was removed`,
  param: 'file_size',
});

export const conversationGone = (conversationId: string): SessionFailure => ({
  code: 'resource_missing',
  message: `No such conversation: ${conversationId}; the file was removed`,
  param: 'conversation_id',
});

export const partsRefused = (message: string) => parameterInvalid('parts', message);

export const partNumberOutOfRange = (param: string, partCount: number) =>
  parameterInvalid(param, `part numbers of this session are 1 to ${partCount}`);
