import type { DynamoDBStreamEvent } from 'aws-lambda';

// Placeholder so the stack synthesizes until the sharing core (the real fan-out) lands on main.
export async function handler(_event: DynamoDBStreamEvent): Promise<void> {
  throw new Error('not built yet');
}
