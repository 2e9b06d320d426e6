import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { conversationKey } from '../shared/dynamo/keys.js';

/**
 * The cold-start reference: the least a DynamoDB-backed function can be, one
 * client and one GetItem. Bundled with the same settings as the real ones.
 */
const client = new DynamoDBClient({ region: process.env.AWS_REGION, endpoint: process.env.DYNAMODB_ENDPOINT });

export async function handler(event: { userId: string; conversationId: string }) {
  const key = conversationKey(event.userId, event.conversationId);
  const { Item } = await client.send(
    new GetItemCommand({
      TableName: process.env.CONVERSATIONS_TABLE ?? 'conversations',
      Key: { pk: { S: key.pk }, sk: { S: key.sk } },
      ConsistentRead: true,
    }),
  );
  return { statusCode: Item ? 200 : 404, body: '' };
}
