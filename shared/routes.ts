/**
 * The route table: every endpoint of the API, once. The local server
 * dispatches by it, the CDK stack makes one function and one method per
 * row, and each handler names its row, so a route is added here and nowhere
 * else.
 */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface Route {
  /** Names the Lambda function and the log stream. */
  name: string;
  method: HttpMethod;
  /** API Gateway resource path; `{id}` is a path parameter. */
  path: string;
  /** The handler module, relative to the repository root; it exports `handler`. */
  entry: string;
  /** Endpoints that take `multipart/form-data` (API Gateway passes the body base64-encoded). */
  binaryBody?: boolean;
  /**
   * Endpoints that store things and so honour Idempotency-Key: the one
   * declaration of it. The stack grants the idempotency table from it
   * (infra/declarations/permissions.ts), and the handler, which imports its row, must then
   * be an IdempotentEndpoint (shared/http/handler.ts) or it does not compile.
   */
  idempotent?: boolean;
  /** What the handler may touch: the stack grants exactly this (least privilege). */
  access: Access;
}

export interface Access {
  /**
   * The item calls the handler makes on each table, error paths included: the stack grants these and
   * no other (a table-wide 'write' level granted calls no route made: the local IAM's record found them).
   */
  conversations?: readonly ItemCall[];
  attachments?: readonly ItemCall[];
  uploadSessions?: readonly ItemCall[];
  /** FEED_APPEND: the change's events go into its transaction; ['get']: an event by its key. */
  events?: readonly ItemCall[];
  /**
   * The tables ('events') and indexes ('events/by_type') the handler queries: Query is granted on
   * these and no other, the item calls above are granted on the table only (the local IAM found a
   * Query on every index unused by all but the lists).
   */
  queries?: readonly QueryTarget[];
  /**
   * S3 object actions under the files prefix; 'get' is also what presigning
   * file_url needs, 'put' what starting, presigning parts of and completing a
   * multipart upload need; 'list-parts' and 'abort' are the multipart rest;
   * 'list' (s3:ListBucket under the prefix) is what makes S3 answer a missing
   * file 404 rather than 403, for a function that must tell a vanished file
   * from a refusal.
   */
  files?: readonly FileAccess[];
}

/**
 * GetItem, PutItem, UpdateItem, DeleteItem, 'check': a transaction's ConditionCheck
 * (ConditionCheckItem; a TransactWriteItems is authorised item by item, Put as PutItem and so on),
 * and 'batch-get': BatchGetItem (a list's large groups' threads).
 */
export type ItemCall = 'get' | 'put' | 'update' | 'delete' | 'check' | 'batch-get';

export type FileAccess = 'get' | 'put' | 'delete' | 'list-parts' | 'abort' | 'list';

/** A table by its part (shared/dynamo/tables.ts) or one of its indexes by name. */
export type QueryTarget = `${'conversations' | 'attachments' | 'uploadSessions' | 'events'}${'' | `/${string}`}`;

/** A change's events in its own transaction (shared/events/outbox.ts): the feed's head read and moved, its events put. */
export const FEED_APPEND = ['get', 'update', 'put'] as const satisfies readonly ItemCall[];

/*
 * One row per route, each its own export: the handler module imports its row
 * (httpHandler(CreateConversation, ...)), so a function bundles its own row and
 * no other. Rows are `as const`, so `idempotent: true` is a type the handler's
 * shape must match. This module imports nothing, and must not: every function
 * bundles it.
 */

export const ListConversations = {
  name: 'ListConversations',
  method: 'GET',
  path: '/v1/conversations',
  entry: 'functions/conversations/list.ts',
  access: {
    // The ended mutes written back (conversations/ended-mutes.ts); the large sides' threads (batch-get).
    conversations: ['get', 'update', 'batch-get'],
    // Every list's index (shared/conversations/list-plan.ts), the ended mutes' (by_mute_end), and the table itself.
    queries: [
      'conversations',
      'conversations/by_activity',
      'conversations/by_archived',
      'conversations/by_archived_activity',
      'conversations/by_contact',
      'conversations/by_group',
      'conversations/by_large_side',
      'conversations/by_mute_end',
      'conversations/by_muted',
      'conversations/by_pinned',
      'conversations/by_unread',
    ],
  },
} as const satisfies Route;
export const CreateConversation = {
  name: 'CreateConversation',
  method: 'POST',
  path: '/v1/conversations',
  entry: 'functions/conversations/create.ts',
  idempotent: true,
  // The side and its uniqueness record put in one transaction; the holder read when the place is taken; a group's
  // thread record read, and checked in the transaction while the thread is small.
  access: { conversations: ['get', 'put', 'check'], events: FEED_APPEND },
} as const satisfies Route;
export const GetConversation = {
  name: 'GetConversation',
  method: 'GET',
  path: '/v1/conversations/{id}',
  entry: 'functions/conversations/get.ts',
  access: { conversations: ['get'] },
} as const satisfies Route;
export const UpdateConversation = {
  name: 'UpdateConversation',
  method: 'PUT',
  path: '/v1/conversations/{id}',
  entry: 'functions/conversations/update.ts',
  access: { conversations: ['get', 'update'], events: FEED_APPEND },
} as const satisfies Route;
export const DeleteConversation = {
  name: 'DeleteConversation',
  method: 'DELETE',
  path: '/v1/conversations/{id}',
  entry: 'functions/conversations/delete.ts',
  // The conversation and its uniqueness record; its attachments go from the stream (CLEANUP_ENTRY).
  access: { conversations: ['get', 'delete'], events: FEED_APPEND },
} as const satisfies Route;
// Every answer that shows an attachment presigns its file_url, hence files: ['get']; conversations read: a
// conversation_id filter reads the conversation (a group's needs the group in the token).
export const ListAttachments = {
  name: 'ListAttachments',
  method: 'GET',
  path: '/v1/attachments',
  entry: 'functions/attachments/list.ts',
  access: { conversations: ['get'], files: ['get'], queries: ['attachments/by_uploader', 'attachments/by_thread'] },
} as const satisfies Route;
export const UploadAttachment = {
  name: 'UploadAttachment',
  method: 'POST',
  path: '/v1/attachments',
  entry: 'functions/attachments/upload.ts',
  binaryBody: true,
  idempotent: true,
  // attachments: the run's intent put, the record put in its place, the intent deleted on a failure; the record
  // read on a replay. conversations: its transaction checks the conversation and moves its activity. No files
  // delete: a failed run's file goes to the cleanup with its intent (shared/attachments/uploads.ts).
  access: {
    attachments: ['get', 'put', 'delete'],
    conversations: ['get', 'update', 'check'],
    files: ['put', 'get'],
    events: FEED_APPEND,
  },
} as const satisfies Route;
// conversations: a thread member's own side (their uniqueness record), for conversation_id.
export const GetAttachment = {
  name: 'GetAttachment',
  method: 'GET',
  path: '/v1/attachments/{id}',
  entry: 'functions/attachments/get.ts',
  access: { attachments: ['get'], conversations: ['get'], files: ['get'] },
} as const satisfies Route;
export const UpdateAttachment = {
  name: 'UpdateAttachment',
  method: 'PUT',
  path: '/v1/attachments/{id}',
  entry: 'functions/attachments/update.ts',
  access: { attachments: ['get', 'update'], files: ['get'], events: FEED_APPEND },
} as const satisfies Route;
// The record; its file goes from the stream (CLEANUP_ENTRY).
export const DeleteAttachment = {
  name: 'DeleteAttachment',
  method: 'DELETE',
  path: '/v1/attachments/{id}',
  entry: 'functions/attachments/delete.ts',
  access: { attachments: ['get', 'delete'], events: FEED_APPEND },
} as const satisfies Route;
export const StartUploadSession = {
  name: 'StartUploadSession',
  method: 'POST',
  path: '/v1/upload_sessions',
  entry: 'functions/upload-sessions/start.ts',
  idempotent: true,
  // uploadSessions: the new session put, nothing read; conversations: the conversation_id check; files abort: a
  // session that could not be recorded is aborted at once.
  access: { uploadSessions: ['put'], conversations: ['get'], files: ['put', 'abort'] },
} as const satisfies Route;
export const GetUploadSession = {
  name: 'GetUploadSession',
  method: 'GET',
  path: '/v1/upload_sessions/{id}',
  entry: 'functions/upload-sessions/get.ts',
  access: { uploadSessions: ['get'], files: ['list-parts'] },
} as const satisfies Route;
// Presigning a part's PUT needs the signer to hold s3:PutObject.
export const SignUploadParts = {
  name: 'SignUploadParts',
  method: 'POST',
  path: '/v1/upload_sessions/{id}/parts',
  entry: 'functions/upload-sessions/sign-parts.ts',
  access: { uploadSessions: ['get'], files: ['put'] },
} as const satisfies Route;
export const CompleteUploadSession = {
  name: 'CompleteUploadSession',
  method: 'POST',
  path: '/v1/upload_sessions/{id}/complete',
  entry: 'functions/upload-sessions/complete.ts',
  idempotent: true,
  // One transaction closes the session (update, as a refused file's failure), puts the attachment and marks its
  // conversation active; a repeat reads the attachment. Files get: the size, the first bytes and file_url; delete: a refused file is removed; list: a file an abort or the
  // cleanup took away meanwhile is a 404 to HEAD and GET, told apart from a refusal (UploadSessionService.complete);
  // abort: a session whose conversation is gone ends its multipart upload (found by the local IAM, issue 26).
  access: {
    uploadSessions: ['get', 'update'],
    attachments: ['get', 'put'],
    conversations: ['get', 'update', 'check'],
    files: ['put', 'get', 'delete', 'list', 'abort'],
    events: FEED_APPEND,
  },
} as const satisfies Route;
export const AbortUploadSession = {
  name: 'AbortUploadSession',
  method: 'DELETE',
  path: '/v1/upload_sessions/{id}',
  entry: 'functions/upload-sessions/abort.ts',
  // The session deleted unless completed; read when it was not, to tell completed from missing.
  access: { uploadSessions: ['get', 'delete'], files: ['abort', 'delete'] },
} as const satisfies Route;
export const ListEvents = {
  name: 'ListEvents',
  method: 'GET',
  path: '/v1/events',
  entry: 'functions/events/list.ts',
  // conversations: a thread feed's side and its group's thread record (conversation_id).
  access: { conversations: ['get'], queries: ['events', 'events/by_type', 'events/by_resource'] },
} as const satisfies Route;
export const GetEvent = {
  name: 'GetEvent',
  method: 'GET',
  path: '/v1/events/{id}',
  entry: 'functions/events/get.ts',
  access: { events: ['get'] },
} as const satisfies Route;
// Where the user's clients connect for pushes (the Event API) and their channels: configuration, and which of the
// token's groups are large (their thread records, batch-get).
export const GetRealtime = {
  name: 'GetRealtime',
  method: 'GET',
  path: '/v1/realtime',
  entry: 'functions/realtime/get.ts',
  access: { conversations: ['batch-get'] },
} as const satisfies Route;

export const routes: readonly Route[] = [
  ListConversations,
  CreateConversation,
  GetConversation,
  UpdateConversation,
  DeleteConversation,
  ListAttachments,
  UploadAttachment,
  GetAttachment,
  UpdateAttachment,
  DeleteAttachment,
  StartUploadSession,
  GetUploadSession,
  SignUploadParts,
  CompleteUploadSession,
  AbortUploadSession,
  ListEvents,
  GetEvent,
  GetRealtime,
];
