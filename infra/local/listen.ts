import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { signToken } from '../../shared/auth/tokens.js';
import { RealtimeClient } from './realtime-client.js';
import { readLocalSecret } from './server.js';
import { readLocalSettings } from './server-settings.js';

// `npm run -s listen -- <user-id> [--since <event id>] [--api http://127.0.0.1:3000]`: a user's live inbox on the
// local server, as a client keeps it (docs/api.md, "Reconnecting"): connect where GET /v1/realtime says, subscribe,
// then read the feed after the newest id held; on each hint read the feed again; reconnect with backoff.
const USAGE = 'usage: npm run -s listen -- <user-id> [--since <event id>] [--api <base URL>]';
const settings = readLocalSettings(process.env);
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { since: { type: 'string' }, api: { type: 'string', default: `http://127.0.0.1:${settings.port}` } },
});
const userId = positionals[0];
if (!userId) {
  console.error(USAGE);
  process.exit(2);
}
const token = await signToken(readLocalSecret(settings.dataDirectory), userId, { ttlSeconds: 24 * 3600 });
/** An answer's JSON, read by key as docs/api.md describes it. */
// biome-ignore lint/suspicious/noExplicitAny: parsed JSON from the local API, read by key unchecked
type Json = any;
const api = async (path: string) => {
  const response = await fetch(`${values.api}/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  if (!response.ok) throw new Error(`GET /v1${path}: ${response.status} ${await response.text()}`);
  return response.json() as Promise<Json>;
};

let newest = values.since;
/** Whether "now" was taken as the starting point: until then, a feed without a cursor starts at its newest event. */
let started = newest !== undefined;
type FeedEvent = { id: string; type: string; data: { object: { id: string } } };
const show = (events: FeedEvent[]) => {
  for (const event of events) console.log(`${event.id}  ${event.type}  ${event.data.object.id}`);
  const last = events.at(-1);
  if (last) newest = last.id;
};

/** Everything after the newest id held, oldest first, page after page. */
async function catchUp(): Promise<void> {
  if (!started) {
    // First read without --since: start from now (the newest event, if any).
    started = true;
    show((await api('/events?limit=1')).data);
    return;
  }
  if (!newest) {
    // The feed was empty when we started: all of it is new.
    const all: FeedEvent[] = [];
    for (let after = ''; ; ) {
      const page = await api(`/events?limit=100${after ? `&starting_after=${after}` : ''}`);
      all.push(...page.data);
      if (!page.has_more) break;
      after = page.data.at(-1).id;
    }
    return show(all.reverse());
  }
  for (;;) {
    const page = await api(`/events?ending_before=${newest}&limit=100`);
    // An ending_before page holds the events just after the cursor, newest first.
    show([...page.data].reverse());
    if (!page.has_more) return;
  }
}

let pause = 500;
for (;;) {
  try {
    const endpoint = await api('/realtime');
    const client = await RealtimeClient.connect({ url: endpoint.url, host: endpoint.host, token });
    let reading = Promise.resolve();
    const readAgain = () => (reading = reading.then(catchUp).catch((error: unknown) => console.error(String(error))));
    await client.subscribe(endpoint.channel, (hint) => {
      console.log(`hint: ${JSON.stringify(hint)}`);
      readAgain();
    });
    console.error(`listening as ${userId} on ${endpoint.channel}${newest ? `, after ${newest}` : ''}`);
    // Subscribed first, then caught up: nothing falls between the two.
    readAgain();
    pause = 500;
    await new Promise<void>((closed) => client.socket.once('close', () => closed()));
    console.error('connection closed; reconnecting');
  } catch (error) {
    console.error(`${String(error)}; retrying in ${pause} ms`);
  }
  await sleep(pause * (0.5 + Math.random()));
  pause = Math.min(30_000, pause * 2);
}
