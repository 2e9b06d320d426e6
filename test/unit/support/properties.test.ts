import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { propertyRuns, propertySeed } from '../../support/properties.js';

describe('propertyRuns', () => {
  it('fails a property its time limit interrupts before its runs are made, naming the seed, instead of passing on fewer', async () => {
    const slow = fc.asyncProperty(fc.nat(), async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    await expect(fc.assert(slow, propertyRuns(77, 1_000, 100))).rejects.toThrow(`{ seed: ${propertySeed(77)} }`);
  });

  it('passes a property that makes all its runs within the limit', async () => {
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.nat(), async () => {
        runs += 1;
      }),
      propertyRuns(77, 25, 60_000),
    );
    expect(runs).toBe(25);
  });
});
