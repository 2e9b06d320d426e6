/**
 * What API Gateway is set to, for the stack (infra/stack/constructs/api.ts) and its local
 * emulator (local/gateway.ts) alike: the binary media types, the body limits the
 * size guard keeps (size-guard.ts) and the authorizer's identity validation.
 */
/** Media types API Gateway must pass through as binary (base64), else uploads arrive corrupted. */
export const BINARY_MEDIA_TYPES = ['multipart/form-data'];

/** Requests API Gateway accepts before our code runs (10 MB payload limit). */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

/**
 * Lambda's limit on a synchronous invocation's request payload: the proxy
 * event's JSON, body included (base64 for binary types, a third larger).
 * Over it Lambda refuses the invoke and API Gateway answers with its own
 * 413 or a 500; the size guard (infra/declarations/size-guard.ts) keeps every event
 * under it (docs/deploying.md, "Request size limits").
 */
export const LAMBDA_MAX_INVOKE_PAYLOAD_BYTES = 6 * 1024 * 1024;

/** What API Gateway's identity validation expression admits to the authorizer. */
export const BEARER_HEADER_PATTERN = '^Bearer [^\\s]+$';
