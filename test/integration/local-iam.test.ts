import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { Permission } from '../../infra/declarations/permissions.js';
import { LOCAL_ACCOUNT } from '../../infra/local/gateway.js';
import { CLEANUP_FUNCTION, FAN_OUT_FUNCTION, type GrantsOverride, localIam, tablesOf } from '../../infra/local/iam.js';
import { startS3 } from '../../infra/local/s3.js';
import { readConfig } from '../../shared/config.js';
import { CompleteUploadSession } from '../../shared/routes.js';
import { type Json, startTestApi, type TestApi } from '../support/api.js';
import { storedFilesOf, upload, uploadForm } from '../support/attachments.js';
import { eventually } from '../support/eventually.js';
import { isS3Head, startFaultProxy } from '../support/fault-proxy.js';
import { sessionClient } from '../support/upload-sessions.js';

/**
 * The local stand-ins refuse what AWS would refuse each function's role
 * (infra/local/iam.ts): with one grant of the stack taken away, the behaviour
 * that needs it fails, and the call is refused with AWS's AccessDenied. Each
 * case first shows the behaviour with the grants as the stack gives them, so
 * that the failure is the grant's, nothing else's.
 */
let t: TestApi | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** The grants as the stack gives them, but `action` taken from `role` (on `resource` only, when given). */
const without =
  (role: string, action: string, resource?: string): GrantsOverride =>
  (name, granted) =>
    name !== role
      ? granted
      : granted.flatMap((permission): Permission[] => {
          if (!permission.actions.includes(action)) return [permission];
          const kept = resource === undefined ? [] : permission.resources.filter((arn) => !arn.endsWith(resource));
          const others = permission.actions.filter((other) => other !== action);
          return [
            ...(others.length ? [{ ...permission, actions: others }] : []),
            ...(kept.length ? [{ ...permission, actions: [action], resources: kept }] : []),
          ];
        });

const refusalOf = (api: TestApi, pattern: RegExp) =>
  eventually(
    async () => api.api.iamRefusals(),
    (refusals) => refusals.some((message) => pattern.test(message)),
    60_000,
  ).then((refusals) => refusals.filter((message) => pattern.test(message)));

describe("the fan-out's dynamodb:ConditionCheckItem", () => {
  const clock = { now: 1_950_000_000 };
  /** Two uploads by a into a group of two in one second: the second finds b's side already at that time, and only checks it. */
  async function twoUploadsInOneSecond(api: TestApi) {
    const g = `iam-g-${randomBytes(3).toString('hex')}`;
    const [a, b] = [`${g}-a`, `${g}-b`];
    const sides: Record<string, string> = {};
    for (const who of [a, b])
      sides[who] = (await api.call(who, 'POST', '/v1/conversations', { form: { group_id: g }, groups: [g] })).body.id;
    const uploadAs = async (name: string) => {
      const response = await api.call(a, 'POST', '/v1/attachments', {
        body: uploadForm({ bytes: name, filename: name }, { conversation_id: sides[a]! }),
        groups: [g],
      });
      expect(response.status).toBe(201);
      return response.body.id as string;
    };
    const reached = async () =>
      (await api.call(b, 'GET', '/v1/events?limit=100', { groups: [g] })).body.data
        .filter((e: Json) => e.type === 'attachment.created')
        .map((e: Json) => e.data.object.id);
    const first = await uploadAs('first.txt');
    await eventually(reached, (ids) => ids.includes(first));
    const second = await uploadAs('second.txt');
    return { second, reached };
  }

  it('lets the second reach the member; without it, the fan-out is refused with AccessDenied and the member is not reached', async () => {
    t = await startTestApi({ clock: () => clock.now });
    const granted = await twoUploadsInOneSecond(t);
    expect(await eventually(granted.reached, (ids) => ids.includes(granted.second))).toContain(granted.second);
    expect(t.api.iamRefusals()).toEqual([]);
    await t.close();

    t = await startTestApi({ clock: () => clock.now, grants: without(FAN_OUT_FUNCTION, 'dynamodb:ConditionCheckItem') });
    const refused = await twoUploadsInOneSecond(t);
    expect(
      await refusalOf(
        t,
        /FanOut is not authorized to perform: dynamodb:ConditionCheckItem on resource: .*_conversations because no identity-based policy allows/,
      ),
    ).toHaveLength(1);
    expect(await refused.reached()).not.toContain(refused.second);
  });
});

describe("the cleanup's Query on the attachments' by_conversation index", () => {
  async function deletedConversationWithUpload(api: TestApi) {
    const user = `iam-cleanup-${randomBytes(3).toString('hex')}`;
    const conversation = (await api.call(user, 'POST', '/v1/conversations', { form: { contact_id: 'someone' } })).body;
    const uploaded = await upload(api, user, { bytes: 'in the conversation', filename: 'in.txt' }, { conversation_id: conversation.id });
    expect(uploaded.status).toBe(201);
    expect((await api.call(user, 'DELETE', `/v1/conversations/${conversation.id}`)).status).toBe(200);
    return { user, attachment: uploaded.body.id as string };
  }

  it("removes a deleted conversation's attachments; without it, the cleanup is refused with AccessDenied and they stay", async () => {
    t = await startTestApi();
    const granted = await deletedConversationWithUpload(t);
    const gone = await eventually(
      () => t!.call(granted.user, 'GET', `/v1/attachments/${granted.attachment}`),
      (response) => response.status === 404,
    );
    expect(gone.status).toBe(404);
    expect(t.api.iamRefusals()).toEqual([]);
    await t.close();

    t = await startTestApi({ grants: without(CLEANUP_FUNCTION, 'dynamodb:Query', '/index/by_conversation') });
    const refused = await deletedConversationWithUpload(t);
    expect(
      await refusalOf(
        t,
        /Cleanup is not authorized to perform: dynamodb:Query on resource: .*_attachments\/index\/by_conversation because/,
      ),
    ).toHaveLength(1);
    expect((await t.call(refused.user, 'GET', `/v1/attachments/${refused.attachment}`)).status).toBe(200);
  });
});

describe("the completion's s3:ListBucket on the files prefix", () => {
  const BASE = { accessKeyId: 'local', secretAccessKey: 'local' };

  /**
   * A completion whose file an abort took away after S3 assembled it: its HEAD finds no file, which S3
   * answers 404 only to a role that may list the files prefix (else 403). The completion's HEAD is held
   * at the S3 stand-in (started here with the roles as given, or with the grant taken away) until the
   * abort is done.
   */
  async function completionAfterAbort(grants?: GrantsOverride) {
    const { filesBucket } = readConfig(process.env);
    const iam = localIam(
      BASE,
      { account: LOCAL_ACCOUNT, region: 'us-east-1', tables: tablesOf(readConfig({})), bucket: filesBucket },
      grants,
    );
    const s3 = await startS3('127.0.0.1', filesBucket, BASE, undefined, 0, [], iam);
    const proxy = await startFaultProxy(s3.endpoint);
    t = await startTestApi({ env: { S3_ENDPOINT: proxy.endpoint } });
    try {
      const sessions = sessionClient(t);
      const user = `iam-list-${randomBytes(3).toString('hex')}`;
      const session = (await sessions.start(user, { filename: 'a.bin', file_size: 1000 })).body;
      const parts = await sessions.uploadAll(user, session, randomBytes(1000));
      const held = proxy.inject({ match: isS3Head, fault: { kind: 'hold' } });
      const completing = sessions.complete(user, session.id, parts);
      await held.hit;
      expect((await sessions.abort(user, session.id)).status).toBe(200);
      held.release();
      const completed = await completing;
      return { completed, refusals: [...iam.refused], files: await storedFilesOf(s3.endpoint, user) };
    } finally {
      await t.close();
      t = undefined;
      await proxy.close();
      await s3.close();
    }
  }

  it('tells the completion the file is gone (404); without it, S3 refuses the HEAD with AccessDenied and the completion fails', async () => {
    const granted = await completionAfterAbort();
    expect(granted.completed.status).toBe(404);
    expect(granted.completed.body.error).toMatchObject({ code: 'resource_missing', param: 'id' });
    expect(granted.refusals).toEqual([]);
    expect(granted.files).toEqual([]);

    const refused = await completionAfterAbort(without(CompleteUploadSession.name, 's3:ListBucket'));
    expect(refused.refusals).toEqual([
      expect.stringMatching(
        /CompleteUploadSession is not authorized to perform: s3:ListBucket on resource: arn:aws:s3:::[^ ]+ because no identity-based policy allows/,
      ),
    ]);
    expect(refused.completed.status).toBe(500);
  });
});
