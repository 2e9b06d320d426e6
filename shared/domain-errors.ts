/**
 * What the services refuse, in the domain's words. They know nothing of HTTP:
 * the pipeline answers each of these in one place (`toApiError` in
 * shared/http/errors.ts, which alone knows the error shape and the status).
 */
export abstract class DomainError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The thing is not the user's to see, or not there: another user's id looks exactly the same. */
export class NotFound extends DomainError {
  constructor(
    readonly resource: string,
    readonly id: string,
  ) {
    super(`No such ${resource}: ${id}`);
  }
}

/** The request names, in `param`, something the user does not have (a conversation_id). */
export class ReferenceMissing extends DomainError {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

/** A group conversation whose group the token does not list: the user may see the thing but not do this to it. */
export class NotAMember extends DomainError {
  constructor(
    readonly groupId: string,
    readonly param?: string,
  ) {
    super(`You are not a member of group ${groupId}`);
  }
}

/** A change or delete of something only its uploader may change. */
export class NotTheOwner extends DomainError {
  constructor(
    readonly resource: string,
    readonly id: string,
  ) {
    super(`Only the uploader may change or delete ${resource} ${id}`);
  }
}

/** What `param` asks for is refused by the domain's rules (a contradiction, a time too far ahead, a part out of range). */
export class InvalidParameter extends DomainError {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

/** An upload session that can no longer do what was asked: expired, completed, or failed (and why). */
export class SessionRefused extends DomainError {
  constructor(
    readonly code: string,
    message: string,
    readonly param?: string,
  ) {
    super(message);
  }
}

/** The Idempotency-Key was already used with a different request. */
export class KeyReused extends DomainError {
  constructor() {
    super('This Idempotency-Key was already used with a different request');
  }
}

/** A request with the same Idempotency-Key is still running after this one waited for it. */
export class KeyInUse extends DomainError {
  constructor() {
    super('A request with this Idempotency-Key is still in progress; retry shortly');
  }
}
