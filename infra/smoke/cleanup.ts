import { describe, type Answer } from './client.js';
import { CheckFailed, type Check, type SmokeContext } from './check.js';
import { download } from './files.js';

export interface CleanupSettings {
  /** How long the stage's cleanup (the stream consumers) may take to remove what hangs off a deletion. */
  withinMs: number;
  everyMs: number;
}

/** How many pages of a list the sweep reads for leftovers (a given token's user may hold much more than the run made). */
const SWEEP_PAGES = 10;

/**
 * The last check, run whatever failed before it: deletes what the run made
 * and reads until the stage holds none of it, within a deadline. Deletions
 * are repeated in every round until one is acknowledged (a 5xx mid-smoke
 * must not leave data behind). Done means: every record answers 404, every
 * file_url minted before the deletion stops returning the bytes (S3 answers
 * 403 to a role without s3:ListBucket, 404 locally), and the user's lists
 * hold nothing of the run.
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
        const listed = await sweep(context);
        await deleteWhatIsLeft(context, acknowledged, refusedDeletes);
        // A conversation that will not go takes none of its attachments with it: delete those directly.
        if ([...context.made.conversations].some((id) => !acknowledged.has(id))) {
          for (const attachment of context.made.attachments.values()) attachment.removedBy = 'delete';
        }
        remaining = [...listed.map((id) => `${id} still listed`), ...(await stillThere(context))];
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

function summary(context: SmokeContext, rounds: number): string {
  const { conversations, attachments } = context.made;
  if (conversations.size + attachments.size === 0) return 'nothing was made';
  return `${conversations.size} conversation(s), ${attachments.size} attachment(s) and their files gone (${rounds} round(s))`;
}

/**
 * What of the run the user's lists show, added to the ledger: what an answer
 * lost after the stage did the work made, and a fresh file_url for what it
 * knows. Its ids, for the last rounds: a deleted item must leave the lists too.
 */
async function sweep(context: SmokeContext): Promise<string[]> {
  const seen: string[] = [];
  for (const conversation of await listed(context, '/v1/conversations')) {
    if (conversation.contact_id !== `${context.marker}-contact`) continue;
    context.made.conversation(conversation.id);
    seen.push(conversation.id);
  }
  for (const attachment of await listed(context, '/v1/attachments')) {
    if (typeof attachment.filename !== 'string' || !attachment.filename.startsWith(context.marker)) continue;
    context.made.attachment({ id: attachment.id, fileUrl: attachment.file_url, removedBy: 'delete' });
    seen.push(attachment.id);
  }
  return seen;
}

async function listed(context: SmokeContext, path: string): Promise<any[]> {
  const items: any[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < SWEEP_PAGES; page++) {
    const answer = await context.client.call(context.user.token, 'GET', `${path}?limit=100${cursor ? `&starting_after=${cursor}` : ''}`);
    stopOnRefusal(answer, `GET ${path}`);
    if (answer.status !== 200) return items;
    items.push(...answer.body.data);
    if (!answer.body.has_more) return items;
    cursor = answer.body.data.at(-1).id;
  }
  return items;
}

async function deleteWhatIsLeft(context: SmokeContext, acknowledged: Set<string>, refused: string[]): Promise<void> {
  const { made, client, user } = context;
  const deletions = [
    ...[...made.pendingSessions].map((id) => ({ id, path: `/v1/upload_sessions/${id}` })),
    ...[...made.attachments.values()].filter((a) => a.removedBy === 'delete').map(({ id }) => ({ id, path: `/v1/attachments/${id}` })),
    ...[...made.conversations].map((id) => ({ id, path: `/v1/conversations/${id}` })),
  ];
  for (const { id, path } of deletions) {
    if (acknowledged.has(id)) continue;
    const answer = await client.call(user.token, 'DELETE', path).catch((error: unknown) => ({ status: 0, text: String(error) }) as Answer);
    stopOnRefusal(answer, `DELETE ${path}`);
    // 409 on a session: it was completed meanwhile; its attachment (named with the marker) is swept as any other.
    if (answer.status === 409 && made.pendingSessions.has(id)) made.sessionCompleted(id);
    // 404: already gone.
    if ([200, 404, 409].includes(answer.status)) acknowledged.add(id);
    else refused.push(`DELETE ${path} answered ${describe(answer)}`);
  }
}

/** What of the run the stage still holds, one phrase each. */
async function stillThere(context: SmokeContext): Promise<string[]> {
  const { made, client, user } = context;
  const remaining: string[] = [];
  const gone = async (path: string) => {
    const answer = await client.call(user.token, 'GET', path).catch((error: unknown) => ({ status: 0, text: String(error) }) as Answer);
    stopOnRefusal(answer, `GET ${path}`);
    if (answer.status !== 404) remaining.push(`GET ${path} answers ${answer.status}`);
  };
  for (const id of made.conversations) await gone(`/v1/conversations/${id}`);
  for (const id of made.pendingSessions) await gone(`/v1/upload_sessions/${id}`);
  for (const { id, fileUrl } of made.attachments.values()) {
    await gone(`/v1/attachments/${id}`);
    // Gone is an answer from S3 (403 or 404); no answer at all proves nothing.
    const file = await download(fileUrl).catch((error: unknown) => ({ status: 0, text: String(error) }));
    if (file.status === 200) remaining.push(`the file of ${id} still downloads through a file_url minted before the deletion`);
    else if (file.status === 0 || file.status >= 500) remaining.push(`the file of ${id} could not be checked: ${file.status || file.text}`);
  }
  return remaining;
}

/** A refused token will not be accepted on the next round either: fail now rather than at the deadline. */
function stopOnRefusal(answer: Answer, what: string): void {
  if (answer.status === 401 || answer.status === 403) throw new CheckFailed(`${what}: ${describe(answer)}`);
}
