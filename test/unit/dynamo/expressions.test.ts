import { describe, expect, it } from 'vitest';
import {
  and,
  atLeast,
  beginsWith,
  equals,
  exists,
  expressions,
  fragment,
  hasType,
  ifNotExists,
  itemAbsent,
  itemExists,
  lessThan,
  not,
  notExists,
  or,
  Placeholders,
  rendered,
} from '../../../shared/dynamo/expressions.js';

describe('expressions', () => {
  it('puts every name and value behind a placeholder, one name placeholder per attribute', () => {
    expect(expressions({ condition: and(itemExists(), equals('status', 'pending'), lessThan('status', 'z')) })).toEqual({
      ConditionExpression: 'attribute_exists(#n0) AND #n1 = :v0 AND #n1 < :v1',
      ExpressionAttributeNames: { '#n0': 'pk', '#n1': 'status' },
      ExpressionAttributeValues: { ':v0': 'pending', ':v1': 'z' },
    });
  });

  it('parenthesizes only where precedence needs it (DynamoDB refuses redundant parentheses)', () => {
    const claim = or(itemAbsent(), and(equals('a', 1), or(equals('b', 2), and(equals('b', 3), lessThan('c', 4)))));
    expect(expressions({ condition: claim }).ConditionExpression).toBe(
      'attribute_not_exists(#n0) OR (#n1 = :v0 AND (#n2 = :v1 OR (#n2 = :v2 AND #n3 < :v3)))',
    );
    expect(expressions({ condition: or(or(exists('a'), exists('b')), exists('c')) }).ConditionExpression).toBe(
      'attribute_exists(#n0) OR attribute_exists(#n1) OR attribute_exists(#n2)',
    );
    expect(expressions({ condition: and(exists('a'), not(hasType('a', 'NULL'))) }).ConditionExpression).toBe(
      'attribute_exists(#n0) AND NOT attribute_type(#n0, :v0)',
    );
    expect(expressions({ condition: not(or(exists('a'), exists('b'))) }).ConditionExpression).toBe(
      'NOT (attribute_exists(#n0) OR attribute_exists(#n1))',
    );
  });

  it('renders an update: SET (with if_not_exists) and REMOVE', () => {
    expect(
      expressions({ update: { set: { state: 'x', seed: ifNotExists('s') }, remove: ['lease'] }, condition: equals('owner', 'o') }),
    ).toEqual({
      UpdateExpression: 'SET #n0 = :v0, #n1 = if_not_exists(#n1, :v1) REMOVE #n2',
      ConditionExpression: '#n3 = :v2',
      ExpressionAttributeNames: { '#n0': 'state', '#n1': 'seed', '#n2': 'lease', '#n3': 'owner' },
      ExpressionAttributeValues: { ':v0': 'x', ':v1': 's', ':v2': 'o' },
    });
    expect(() => expressions({ update: { set: {}, remove: [] } })).toThrow();
  });

  it('renders key conditions, filters and projections with one set of placeholders', () => {
    expect(
      expressions({
        keyCondition: and(equals('pk', 'u'), beginsWith('sk', 'att_')),
        filter: equals('conversation_id', 'c'),
        projection: ['pk', 'sk'],
      }),
    ).toEqual({
      KeyConditionExpression: '#n0 = :v0 AND begins_with(#n1, :v1)',
      FilterExpression: '#n2 = :v2',
      ProjectionExpression: '#n0, #n1',
      ExpressionAttributeNames: { '#n0': 'pk', '#n1': 'sk', '#n2': 'conversation_id' },
      ExpressionAttributeValues: { ':v0': 'u', ':v1': 'att_', ':v2': 'c' },
    });
  });

  it('gives no values map when nothing has a value (DynamoDB refuses an empty one)', () => {
    expect(expressions({ condition: itemAbsent() })).toEqual({
      ConditionExpression: 'attribute_not_exists(#n0)',
      ExpressionAttributeNames: { '#n0': 'pk' },
    });
  });

  it('renders a fragment apart, ANDable as it is, holding only what it uses, and joins it to a command unchanged', () => {
    const shared = new Placeholders('r');
    const first = fragment(equals('a', 1), shared);
    const second = fragment(or(notExists('b'), atLeast('b', 2)), shared);
    expect(second).toEqual({ expression: '(attribute_not_exists(#rn1) OR #rn1 >= :rv1)', names: { '#rn1': 'b' }, values: { ':rv1': 2 } });
    expect(expressions({ condition: and(itemExists(), rendered(first), rendered(second)) })).toEqual({
      ConditionExpression: 'attribute_exists(#n0) AND #rn0 = :rv0 AND (attribute_not_exists(#rn1) OR #rn1 >= :rv1)',
      ExpressionAttributeNames: { '#n0': 'pk', '#rn0': 'a', '#rn1': 'b' },
      ExpressionAttributeValues: { ':rv0': 1, ':rv1': 2 },
    });
  });

  it('refuses a fragment whose placeholder already stands for something else', () => {
    const clash = rendered({ expression: '#n0 = :v0', names: { '#n0': 'other' }, values: { ':v0': 1 } });
    expect(() => expressions({ condition: and(itemExists(), clash) })).toThrow(/#n0/);
  });
});
