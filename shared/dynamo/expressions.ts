import { PARTITION_KEY } from './keys.js';

/**
 * The one place that writes DynamoDB expressions. Every attribute name goes
 * through ExpressionAttributeNames (`#…`) and every value through
 * ExpressionAttributeValues (`:…`), so no attribute can collide with one of
 * DynamoDB's reserved words and no value is ever spelled into an expression.
 * Placeholders are numbered as a command is rendered, so a command holds
 * exactly the names and values its expressions use (DynamoDB refuses unused
 * ones) and fragments rendered apart never collide.
 */

/** An expression with the names and values its placeholders stand for. */
export interface Expression {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** How a condition binds: AND and OR get parentheses only where precedence needs them (DynamoDB refuses redundant ones). */
type Binding = 'operand' | 'and' | 'or';

/** A condition, rendered against a command's placeholders. */
export interface Condition {
  render(placeholders: Placeholders): { text: string; binding: Binding };
}

/** Placeholders of one command (or of one fragment, under its own prefix). */
export class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly byAttribute = new Map<string, string>();
  private valueCount = 0;

  constructor(private readonly prefix = '') {}

  name(attribute: string): string {
    let placeholder = this.byAttribute.get(attribute);
    if (!placeholder) {
      placeholder = `#${this.prefix}n${this.byAttribute.size}`;
      this.byAttribute.set(attribute, placeholder);
      this.bindName(placeholder, attribute);
    }
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:${this.prefix}v${this.valueCount++}`;
    this.bindValue(placeholder, value);
    return placeholder;
  }

  /** A fragment rendered under another prefix joins this command as it is. */
  adopt(fragment: Expression): string {
    for (const [placeholder, attribute] of Object.entries(fragment.names)) this.bindName(placeholder, attribute);
    for (const [placeholder, value] of Object.entries(fragment.values)) this.bindValue(placeholder, value);
    return fragment.expression;
  }

  private bindName(placeholder: string, attribute: string): void {
    if (placeholder in this.names && this.names[placeholder] !== attribute)
      throw new Error(`${placeholder} already names ${this.names[placeholder]}`);
    this.names[placeholder] = attribute;
  }

  private bindValue(placeholder: string, value: unknown): void {
    if (placeholder in this.values && this.values[placeholder] !== value)
      throw new Error(`${placeholder} already stands for another value`);
    this.values[placeholder] = value;
  }
}

const operand = (render: (p: Placeholders) => string): Condition => ({ render: (p) => ({ text: render(p), binding: 'operand' }) });
const compare = (operator: string) => (attribute: string, value: unknown) =>
  operand((p) => `${p.name(attribute)} ${operator} ${p.value(value)}`);

export const exists = (attribute: string): Condition => operand((p) => `attribute_exists(${p.name(attribute)})`);
export const notExists = (attribute: string): Condition => operand((p) => `attribute_not_exists(${p.name(attribute)})`);
/** `type` is one of DynamoDB's type descriptors: S, N, B, BOOL, NULL, L, M, SS, NS, BS. */
export const hasType = (attribute: string, type: string): Condition =>
  operand((p) => `attribute_type(${p.name(attribute)}, ${p.value(type)})`);
export const beginsWith = (attribute: string, prefix: string): Condition =>
  operand((p) => `begins_with(${p.name(attribute)}, ${p.value(prefix)})`);
export const equals = compare('=');
export const notEquals = compare('<>');
export const lessThan = compare('<');
export const atMost = compare('<=');
export const greaterThan = compare('>');
export const atLeast = compare('>=');
/** `low` ≤ the attribute ≤ `high`: the one range a key condition can put on a sort key. */
export const between = (attribute: string, low: unknown, high: unknown): Condition =>
  operand((p) => `${p.name(attribute)} BETWEEN ${p.value(low)} AND ${p.value(high)}`);

/** The item exists: the condition on its partition key, which every item has. */
export const itemExists = (): Condition => exists(PARTITION_KEY);
/** No item has this key yet. */
export const itemAbsent = (): Condition => notExists(PARTITION_KEY);

function junction(keyword: 'AND' | 'OR', conditions: Condition[]): Condition {
  const binding = keyword === 'AND' ? 'and' : 'or';
  return {
    render: (p) => {
      const parts = conditions.map((condition) => condition.render(p));
      if (parts.length === 1 && parts[0]) return parts[0];
      const texts = parts.map((part) => (part.binding === 'operand' || part.binding === binding ? part.text : `(${part.text})`));
      return { text: texts.join(` ${keyword} `), binding };
    },
  };
}

export const and = (...conditions: Condition[]): Condition => junction('AND', conditions);
export const or = (...conditions: Condition[]): Condition => junction('OR', conditions);
export const not = (condition: Condition): Condition =>
  operand((p) => {
    const inner = condition.render(p);
    return `NOT ${inner.binding === 'operand' ? inner.text : `(${inner.text})`}`;
  });

/**
 * A condition rendered apart (see `fragment`), joined as it is: its text must
 * be safe to AND with another condition without parentheses.
 */
export const rendered = (fragment: Expression): Condition => ({ render: (p) => ({ text: p.adopt(fragment), binding: 'and' }) });

/**
 * A condition on its own, under placeholders of its own prefix, for a caller
 * that combines conditions later: an OR comes in its one pair of parentheses,
 * so the fragment ANDs with anything as it is.
 */
export function fragment(condition: Condition, placeholders: Placeholders): Expression {
  const { text: inner, binding } = condition.render(placeholders);
  const text = binding === 'or' ? `(${inner})` : inner;
  const names = { ...placeholders.names };
  const values = { ...placeholders.values };
  // Only what this fragment uses: the placeholders may be shared by several fragments.
  const used = (placeholder: string) => new RegExp(`${placeholder}(?!\\w)`).test(text);
  return {
    expression: text,
    names: Object.fromEntries(Object.entries(names).filter(([placeholder]) => used(placeholder))),
    values: Object.fromEntries(Object.entries(values).filter(([placeholder]) => used(placeholder))),
  };
}

/** A value SET only where the attribute has none yet. */
export class IfNotExists {
  constructor(readonly value: unknown) {}
}
export const ifNotExists = (value: unknown): IfNotExists => new IfNotExists(value);

/** An UpdateExpression's actions: attributes to SET (to a value, or `ifNotExists`) and to REMOVE. */
export interface Update {
  set?: Iterable<readonly [attribute: string, value: unknown]> | Record<string, unknown>;
  remove?: Iterable<string>;
}

/** Whether an update has any action (an UpdateExpression cannot be empty). */
export function hasActions(update: Update): boolean {
  return listed(update.set).length > 0 || [...(update.remove ?? [])].length > 0;
}

const listed = (set: Update['set']): (readonly [string, unknown])[] =>
  set === undefined ? [] : Symbol.iterator in set ? [...(set as Iterable<readonly [string, unknown]>)] : Object.entries(set);

function renderUpdate(update: Update, p: Placeholders): string {
  if (!hasActions(update)) throw new Error('An update with nothing to SET or REMOVE');
  const assignments = listed(update.set).map(([attribute, value]) => {
    const name = p.name(attribute);
    return value instanceof IfNotExists ? `${name} = if_not_exists(${name}, ${p.value(value.value)})` : `${name} = ${p.value(value)}`;
  });
  const removals = [...(update.remove ?? [])].map((attribute) => p.name(attribute));
  const clauses = [assignments.length ? `SET ${assignments.join(', ')}` : '', removals.length ? `REMOVE ${removals.join(', ')}` : ''];
  return clauses.filter(Boolean).join(' ');
}

/** What a command's expressions are made of; each is optional. */
export interface ExpressionParts {
  condition?: Condition;
  keyCondition?: Condition;
  filter?: Condition;
  update?: Update;
  projection?: readonly string[];
}

/** The expressions of one command with their names and values, to spread into its input. */
export interface CommandExpressions {
  ConditionExpression?: string;
  KeyConditionExpression?: string;
  FilterExpression?: string;
  UpdateExpression?: string;
  ProjectionExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
}

/** Which expression each part becomes. */
interface ExpressionOfPart {
  condition: 'ConditionExpression';
  keyCondition: 'KeyConditionExpression';
  filter: 'FilterExpression';
  update: 'UpdateExpression';
  projection: 'ProjectionExpression';
}

/** The expressions a command gets: each part it was given is certainly there (a transaction item's type requires its own). */
type ExpressionsOf<P extends ExpressionParts> = CommandExpressions & {
  [K in keyof P & keyof ExpressionOfPart as undefined extends P[K] ? never : ExpressionOfPart[K]]: string;
};

/** Renders a command's expressions with one set of placeholders (an update must have an action: see hasActions). */
export function expressions<P extends ExpressionParts>(parts: P): ExpressionsOf<P> {
  const p = new Placeholders();
  const out: CommandExpressions = {};
  if (parts.keyCondition) out.KeyConditionExpression = parts.keyCondition.render(p).text;
  if (parts.update) out.UpdateExpression = renderUpdate(parts.update, p);
  if (parts.condition) out.ConditionExpression = parts.condition.render(p).text;
  if (parts.filter) out.FilterExpression = parts.filter.render(p).text;
  if (parts.projection) out.ProjectionExpression = parts.projection.map((attribute) => p.name(attribute)).join(', ');
  if (Object.keys(p.names).length > 0) out.ExpressionAttributeNames = p.names;
  if (Object.keys(p.values).length > 0) out.ExpressionAttributeValues = p.values;
  return out as ExpressionsOf<P>;
}
