/** A conditional write whose condition did not hold. */
export const isConditionFailed = (error: unknown): boolean => error instanceof Error && error.name === 'ConditionalCheckFailedException';

/**
 * A conditional write's result, or undefined when its condition did not hold
 * (the item was not there, or not as expected): the one place that turns
 * that refusal into an answer; every other error is thrown.
 */
export async function unlessConditionFails<T>(write: Promise<T>): Promise<T | undefined> {
  try {
    return await write;
  } catch (error) {
    if (isConditionFailed(error)) return undefined;
    throw error;
  }
}
