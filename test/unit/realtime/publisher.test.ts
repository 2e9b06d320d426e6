import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EventApiPublisher, PublishFailed } from '../../../shared/realtime/publisher.js';

/** A loopback stand-in of the Event API's HTTP publish that answers from a script and records each request. */
async function eventApi(answers: ((body: { channel: string; events: string[] }) => [number, unknown])[]) {
  const requests: { path: string; authorization: string; body: { channel: string; events: string[] } }[] = [];
  const server: Server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      const body = JSON.parse(text);
      requests.push({ path: request.url ?? '', authorization: String(request.headers.authorization), body });
      const answer = answers.length > 1 ? answers.shift()! : answers[0]!;
      const [status, payload] = answer(body);
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(payload));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  servers.push(server);
  const publisher = new EventApiPublisher({ url: `ws://${host}/event/realtime`, host }, 'eu-west-1', {
    accessKeyId: 'AKID',
    secretAccessKey: 'secret',
  });
  return { publisher, requests };
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const taken = (body: { events: string[] }): [number, unknown] => [
  200,
  { successful: body.events.map((_, index) => ({ identifier: `i${index}`, index })), failed: [] },
];
const hint = (channel: string, n: number) => ({
  channel,
  event: JSON.stringify({ type: 'feed', event_id: `evt_${n}`, event_type: 'conversation.updated' }),
});

describe('the Event API publisher', () => {
  it("publishes each channel's hints in order, five per request, SigV4-signed for appsync in the region, on /event", async () => {
    const { publisher, requests } = await eventApi([taken]);
    const hints = [...Array.from({ length: 12 }, (_, n) => hint('/inbox/u-a', n)), hint('/inbox/u-b', 99)];
    expect(await publisher.publishAll(hints)).toBe(2);
    const ofA = requests.filter((request) => request.body.channel === '/inbox/u-a');
    expect(ofA.map((request) => request.body.events.length)).toEqual([5, 5, 2]);
    expect(ofA.flatMap((request) => request.body.events)).toEqual(hints.slice(0, 12).map((h) => h.event));
    expect(requests.filter((request) => request.body.channel === '/inbox/u-b').map((request) => request.body.events)).toEqual([
      [hints[12]!.event],
    ]);
    for (const request of requests) {
      expect(request.path).toBe('/event');
      expect(request.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKID\/\d{8}\/eu-west-1\/appsync\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
      );
    }
  });

  it('fails when the API refuses any event of a request, so the batch is retried', async () => {
    const { publisher } = await eventApi([
      (body) => [200, { successful: [], failed: body.events.map((_, index) => ({ index, code: 400, message: 'no' })) }],
    ]);
    await expect(publisher.publishAll([hint('/inbox/u-a', 1)])).rejects.toThrow(PublishFailed);
  });

  it('tries a 5xx or 429 again, at most three times, and a 4xx not at all', async () => {
    const flaky = await eventApi([() => [503, {}], () => [429, {}], taken]);
    await flaky.publisher.publish('/inbox/u-a', ['{}']);
    expect(flaky.requests).toHaveLength(3);
    const down = await eventApi([() => [500, {}]]);
    await expect(down.publisher.publish('/inbox/u-a', ['{}'])).rejects.toThrow(/answered 500/);
    expect(down.requests).toHaveLength(3);
    const refused = await eventApi([() => [401, { errors: [{ errorType: 'UnauthorizedException' }] }]]);
    await expect(refused.publisher.publish('/inbox/u-a', ['{}'])).rejects.toThrow(/answered 401/);
    expect(refused.requests).toHaveLength(1);
  });
});
