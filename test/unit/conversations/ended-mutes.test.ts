import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeIntoPage } from '../../../shared/conversations/ended-mutes.js';
import type { PageRequest } from '../../../shared/pagination.js';

// Ids as the list orders them (string order = creation order); items carry only their id here.
const id = (n: number) => `conv_${String(n).padStart(26, '0')}`;

describe('mergeIntoPage', () => {
  it('gives exactly the page and has_more of the whole union, forwards and backwards', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 60 }), { maxLength: 40 }),
        fc.func(fc.boolean()),
        fc.func(fc.boolean()),
        fc.integer({ min: 1, max: 8 }),
        fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
        fc.boolean(),
        (numbers, isEnded, alsoInMain, limit, cursorNumber, backwards) => {
          // Each id is on one side (an ended mute, or in by_muted's false partition); some ended ones also show on the main side.
          const ended = numbers.filter((n) => isEnded(n)).map(id);
          const mainSide = numbers.filter((n) => !isEnded(n) || alsoInMain(n)).map(id);
          const all = [...new Set([...ended, ...mainSide])];
          const cursor = cursorNumber === undefined ? undefined : id(cursorNumber);
          const page: PageRequest = {
            limit,
            ...(cursor === undefined ? {} : backwards ? { endingBefore: cursor } : { startingAfter: cursor }),
          };
          const beyond = (value: string) => cursor === undefined || (backwards && cursor !== undefined ? value > cursor : value < cursor);
          // What the main query returns for this page: the nearest `limit` beyond the cursor, newest first, with its has_more.
          const mainBeyond = mainSide.filter(beyond).sort();
          const mainNearest = backwards && cursor !== undefined ? mainBeyond.slice(0, limit) : mainBeyond.reverse().slice(0, limit);
          const main = {
            has_more: mainBeyond.length > limit,
            data: [...mainNearest]
              .sort()
              .reverse()
              .map((value) => ({ id: value })),
          };

          const union = all.filter(beyond).sort();
          const nearest = backwards && cursor !== undefined ? union.slice(0, limit) : union.reverse().slice(0, limit);
          const merged = mergeIntoPage(
            main,
            ended.map((value) => ({ id: value })),
            page,
          );
          expect(merged.data.map((item) => item.id)).toEqual([...nearest].sort().reverse());
          expect(merged.has_more).toBe(union.length > limit);
        },
      ),
    );
  });
});
