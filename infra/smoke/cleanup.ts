import { type Check, CheckFailed, type SmokeContext, type SmokeUser } from './check.js';
import { type Answer, describe, type Json } from './client.js';
import { download } from './files.js';
import type { Ledger } from './ledger.js';

export interface CleanupSettings {
  /** How long the stage's cleanup (the stream consumers) may take to remove what hangs off a deletion. */
  withinMs: number;
  everyMs: number;
}

/** How many pages of a list the sweep reads for leftovers (a given token's user may hold much more than the run made). */
const SWEEP_PAGES = 10;

/**
 * The last check, run whatever failed before it: deletes what the run made,
 * as whichever user holds it, and reads until the stage holds none of it,
 * within a deadline. Deletions are repeated in every round until one is
 * acknowledged (a 5xx mid-smoke must not leave data behind). Done means:
 * every record answers 404 (an attachment to every user of the run), every
 * file_url minted before the deletion stops returning the bytes (S3 answers
 * 403 to a role without s3:ListBucket, 404 locally), the side the stage owed
 * the second user (sharing) has appeared and gone, and neither user's lists
 * hold anything of the run.
 */
export function cleanup(settings: CleanupSettings): Check {
  return {
    name: 'delete all, wait for the cleanup to empty it',
    async run(context) {
      const deadline = Date.now() + settings.withinMs;
      const acknowledged = new Set<string>();
      const refusedDeletes: string[] = [];
      let remaining: string[] = [];
      for (let round = 1; ; round++) {
        remaining = [];
        for (const holder of holdersOf(context)) {
          const listed = await sweep(context, holder);
          await deleteWhatIsLeft(context, holder, acknowledged, refusedDeletes);
          // A conversation that will not go takes none of its attachments with it: delete those directly.
          if ([...holder.made.conversations].some((id) => !acknowledged.has(id))) {
            for (const attachment of holder.made.attachments.values()) attachment.removedBy = 'delete';
          }
          remaining.push(...listed, ...(await stillThere(context, holder)));
        }
        if (remaining.length === 0) {
          // Emptied in the end, but a deletion a client would have seen fail is a failure of the stage.
          if (refusedDeletes.length > 0) throw new CheckFailed(`emptied, but ${refusedDeletes.join('; ')}`);
          return summary(context, round);
        }
        if (Date.now() + settings.everyMs > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, settings.everyMs));
      }
      throw new CheckFailed(`after ${Math.round(settings.withinMs / 1000)} s still there: ${remaining.join('; ')}`);
    },
  };
}

/** A user of the run and what the run made that they hold. */
interface Holder {
  user: SmokeUser;
  made: Ledger;
}

function holdersOf(context: SmokeContext): Holder[] {
  return [{ user: context.user, made: context.made }, ...(context.other ? [{ user: context.other, made: context.madeForOther }] : [])];
}

function summary(context: SmokeContext, rounds: number): string {
  const holders = holdersOf(context);
  const conversations = holders.reduce((sum, { made }) => sum + made.conversations.size, 0);
  const attachments = holders.reduce((sum, { made }) => sum + made.attachments.size, 0);
  if (conversations + attachments === 0) return 'nothing was made';
  return `${conversations} conversation(s), ${attachments} attachment(s) and their files gone (${rounds} round(s))`;
}

/**
 * What of the run the holder's lists show, added to their ledger: what an
 * answer lost after the stage did the work made, the side the stage made
 * for them, and a fresh file_url for what it knows. Returns what it saw of
 * the run, one phrase each: a deleted item must leave the lists too, and a
 * list that cannot be read proves nothing.
 */
async function sweep(context: SmokeContext, { user, made }: Holder): Promise<string[]> {
  const conversations = await listed(context, user, '/v1/conversations');
  const attachments = await listed(context, user, '/v1/attachments');
  const seen = [conversations.problem, attachments.problem].filter((problem): problem is string => problem !== undefined);
  for (const conversation of conversations.items) {
    if (!made.madeWith(conversation.contact_id, context.marker)) continue;
    made.conversation(conversation.id, conversation.contact_id);
    seen.push(`${conversation.id} still listed`);
  }
  for (const attachment of attachments.items) {
    if (typeof attachment.filename !== 'string' || !attachment.filename.startsWith(context.marker)) continue;
    made.attachment({ id: attachment.id, fileUrl: attachment.file_url, removedBy: 'delete' });
    seen.push(`${attachment.id} still listed`);
  }
  return seen;
}

async function listed(context: SmokeContext, user: SmokeUser, path: string): Promise<{ items: Json[]; problem?: string }> {
  const items: Json[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < SWEEP_PAGES; page++) {
    const answer = await attempt(context, user, 'GET', `${path}?limit=100${cursor ? `&starting_after=${cursor}` : ''}`);
    if (answer.status !== 200) return { items, problem: `GET ${path} answered ${describe(answer)}` };
    items.push(...answer.body.data);
    if (!answer.body.has_more) break;
    cursor = answer.body.data.at(-1).id;
  }
  return { items };
}

/** A call of the cleanup: no answer at all is status 0 (the next round tries again); a refused token ends it. */
async function attempt(context: SmokeContext, user: SmokeUser, method: string, path: string): Promise<Answer> {
  const answer = await context.client
    .call(user.token, method, path)
    .catch((error: unknown): Answer => ({ status: 0, headers: new Headers(), body: undefined, text: String(error) }));
  // A refused token will not be accepted on the next round either: fail now rather than at the deadline.
  if (answer.status === 401 || answer.status === 403) throw new CheckFailed(`${method} ${path}: ${describe(answer)}`);
  return answer;
}

async function deleteWhatIsLeft(
  context: SmokeContext,
  { user, made }: Holder,
  acknowledged: Set<string>,
  refused: string[],
): Promise<void> {
  const deletions = [
    ...[...made.pendingSessions].map((id) => ({ id, path: `/v1/upload_sessions/${id}` })),
    ...[...made.attachments.values()].filter((a) => a.removedBy === 'delete').map(({ id }) => ({ id, path: `/v1/attachments/${id}` })),
    ...[...made.conversations].map((id) => ({ id, path: `/v1/conversations/${id}` })),
  ];
  for (const { id, path } of deletions) {
    if (acknowledged.has(id)) continue;
    const answer = await attempt(context, user, 'DELETE', path);
    // 409 on a session: it was completed meanwhile; its attachment (named with the marker) is swept as any other.
    if (answer.status === 409 && made.pendingSessions.has(id)) made.sessionCompleted(id);
    // 404: already gone.
    if ([200, 404, 409].includes(answer.status)) acknowledged.add(id);
    else refused.push(`DELETE ${path} answered ${describe(answer)}`);
  }
}

/** What of the run the stage still holds for this holder, one phrase each. */
async function stillThere(context: SmokeContext, { user, made }: Holder): Promise<string[]> {
  const remaining: string[] = [];
  const gone = async (path: string, reader = user) => {
    const answer = await attempt(context, reader, 'GET', path);
    if (answer.status !== 404) remaining.push(`GET ${path} answers ${answer.status}${reader === user ? '' : ` to ${reader.label}`}`);
  };
  for (const contactId of made.awaitedSides)
    remaining.push(`${user.label}'s conversation with ${contactId}, which the stage owes them, has not appeared yet`);
  for (const id of made.conversations) await gone(`/v1/conversations/${id}`);
  for (const id of made.pendingSessions) await gone(`/v1/upload_sessions/${id}`);
  for (const { id, fileUrl } of made.attachments.values()) {
    // A deleted attachment is gone for every member of its thread, not only its uploader.
    for (const reader of holdersOf(context).map((holder) => holder.user)) await gone(`/v1/attachments/${id}`, reader);
    // Gone is an answer from S3 (403 or 404); no answer at all proves nothing.
    const file = await download(fileUrl).catch((error: unknown) => ({ status: 0, text: String(error) }));
    if (file.status === 200) remaining.push(`the file of ${id} still downloads through a file_url minted before the deletion`);
    else if (file.status === 0 || file.status >= 500) remaining.push(`the file of ${id} could not be checked: ${file.status || file.text}`);
  }
  return remaining;
}
