import { randomBytes } from 'node:crypto';
import { MAX_EVENT_SEQUENCE } from '../dynamo/keys.js';

/**
 * Event ids: `evt_`, the event's sequence number in the user's feed (8
 * Crockford base32 digits, enough for 12 decimal ones), and 80 random bits
 * (16 digits). The sequence part makes one user's ids sort like their
 * sequence and names the one item a GET reads; the random part makes an id
 * unguessable, so another user's id (a sequence of this user's too) never
 * equals the id stored there.
 */
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const SEQUENCE_DIGITS = 8;
const RANDOM_DIGITS = 16;
const EVENT_ID = new RegExp(`^evt_[${ALPHABET}]{${SEQUENCE_DIGITS + RANDOM_DIGITS}}$`);

export function eventId(sequence: number, random: Buffer = randomBytes((RANDOM_DIGITS * 5) / 8)): string {
  if (!Number.isSafeInteger(sequence) || sequence < 1 || sequence > MAX_EVENT_SEQUENCE)
    throw new RangeError(`No event sequence: ${sequence}`);
  return `evt_${base32(BigInt(sequence), SEQUENCE_DIGITS)}${base32(BigInt(`0x${random.toString('hex')}`), RANDOM_DIGITS)}`;
}

/** The sequence number an event id names, or undefined when it is no event id of ours. */
export function sequenceOf(id: string): number | undefined {
  if (!EVENT_ID.test(id)) return undefined;
  let sequence = 0;
  for (const digit of id.slice(4, 4 + SEQUENCE_DIGITS)) sequence = sequence * 32 + ALPHABET.indexOf(digit);
  return sequence >= 1 && sequence <= MAX_EVENT_SEQUENCE ? sequence : undefined;
}

export const isEventId = (value: string): boolean => sequenceOf(value) !== undefined;

function base32(value: bigint, digits: number): string {
  let text = '';
  for (let rest = value; text.length < digits; rest >>= 5n) text = ALPHABET[Number(rest & 31n)] + text;
  return text;
}
