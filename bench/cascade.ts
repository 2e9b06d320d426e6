import { parseArgs } from 'node:util';
import { startLocalApi } from '../infra/local/server.js';
import { dynamo } from '../shared/app.js';
import { attachmentItem } from '../shared/attachments/dynamo-store.js';
import { signToken } from '../shared/auth/tokens.js';
import { fileKey } from '../shared/files/keys.js';
import { newId } from '../shared/ids.js';
import { BATCH_WRITE_MAX, batchWriteAll } from './batch-write.js';
import { round } from './stats.js';

// `POWERTOOLS_LOG_LEVEL=WARN npx tsx bench/cascade.ts [--attachments 10000]`: how long DELETE /v1/conversations/:id takes for a
// conversation with that many attachments, and how long until the stream cleanup has removed their records.
const { values } = parseArgs({ options: { attachments: { type: 'string', default: '10000' } } });
const count = Number(values.attachments);
const api = await startLocalApi({ port: 0 });
try {
  const user = 'user_cascade';
  const token = await signToken(api.authSecret, user);
  const call = (method: string, path: string, body?: URLSearchParams) =>
    fetch(`${api.url}${path}`, { method, headers: { authorization: `Bearer ${token}` }, body });
  const conversation = (await (await call('POST', '/v1/conversations', new URLSearchParams({ contact_id: 'many' }))).json()) as {
    id: string;
  };
  // Records as uploads leave them (files are not needed to measure the cascade: removing a missing file is a no-op).
  const items = Array.from({ length: count }, () => {
    const id = newId('att');
    return attachmentItem({
      id,
      message_id: null,
      filename: 'f.txt',
      file_type: 'text/plain',
      file_size: 1,
      created_at: 1_700_000_000,
      uploaded_by: user,
      placement: { conversation_id: conversation.id, counterpart: { kind: 'contact', id: 'many' } },
      file_key: fileKey(user, id, 'seeded'),
      scan_status: 'clean' as const,
    });
  });
  const seedStarted = performance.now();
  for (let start = 0; start < items.length; start += BATCH_WRITE_MAX) {
    const batch = items.slice(start, start + BATCH_WRITE_MAX).map((Item) => ({ PutRequest: { Item } }));
    await batchWriteAll(api.composition.use(dynamo), api.config.attachmentsTable, batch);
  }
  console.error(`seeded ${count} attachment records in ${round((performance.now() - seedStarted) / 1000)} s`);

  const started = performance.now();
  const answer = await call('DELETE', `/v1/conversations/${conversation.id}`);
  const answeredMs = performance.now() - started;
  let remaining = count;
  while (remaining > 0) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const page = (await (await call('GET', `/v1/attachments?conversation_id=${conversation.id}&limit=1`)).json()) as { data: unknown[] };
    remaining = page.data.length;
  }
  const goneMs = performance.now() - started;
  console.log(
    JSON.stringify({
      attachments: count,
      deleteStatus: answer.status,
      deleteAnsweredMs: round(answeredMs),
      attachmentsGoneAfterMs: round(goneMs),
    }),
  );
} finally {
  await api.close();
}
