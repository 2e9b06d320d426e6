import { afterAll, beforeAll, expect } from 'vitest';
import { logger } from '../../shared/observability.js';

/**
 * The files of a worker share its process and its loaded modules (isolate: false): a file that
 * changes the handlers' logger level or process.env puts it back, or the files after it run changed
 * (a silenced logger hid the server's side of every later failure). Fails the file that leaks.
 */
let before: { logLevel: string; env: Record<string, string | undefined> } | undefined;

/** What a library sets as it loads, in whichever file loads it first: libvips (sharp) sets VIPSHOME. */
const SET_BY_LIBRARIES = new Set(['VIPSHOME']);
const environment = () => Object.fromEntries(Object.entries(process.env).filter(([name]) => !SET_BY_LIBRARIES.has(name)));

beforeAll(() => {
  before = { logLevel: logger.getLevelName(), env: environment() };
});

afterAll(() => {
  expect(logger.getLevelName(), 'the log level this file leaves behind').toBe(before?.logLevel);
  expect(environment(), 'process.env as this file leaves it').toEqual(before?.env);
});
