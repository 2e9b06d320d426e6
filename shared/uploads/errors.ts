import { InvalidParameter, SessionRefused } from '../domain-errors.js';
import type { SessionFailure } from './model.js';

/** Refusals of the upload sessions (domain errors: the pipeline answers them 400 with their code). */
const sessionRefused = (code: string, message: string, param?: string) => new SessionRefused(code, message, param);

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

export const partsRefused = (message: string) => new InvalidParameter('parts', message);

export const partNumberOutOfRange = (param: string, partCount: number) =>
  new InvalidParameter(param, `part numbers of this session are 1 to ${partCount}`);
