import { describe, expect, it } from 'vitest';
import { idWithUlidOf, isConversationId, newId } from '../../shared/ids.js';

describe('ids', () => {
  it('makes a conversation id from an attachment id that keeps its ULID, the same on every call', () => {
    const attachmentId = newId('att');
    const conversationId = idWithUlidOf('conv', attachmentId);
    expect(isConversationId(conversationId)).toBe(true);
    expect(conversationId.slice('conv_'.length)).toBe(attachmentId.slice('att_'.length));
    expect(idWithUlidOf('conv', attachmentId)).toBe(conversationId);
  });
});
