import { describe, expect, it } from 'vitest';
import { checkJava, JavaMissing, javaRelease } from '../../../../infra/local/dynamodb.js';

describe('the Java check before DynamoDB Local starts', () => {
  it.each([
    ['openjdk version "17.0.15" 2025-04-15', 17],
    ['openjdk version "21" 2023-09-19', 21],
    ['java version "1.8.0_392"', 8],
    ['openjdk version "11.0.22" 2024-01-16', 11],
  ])('reads the major release from %s', (output, release) => {
    expect(javaRelease(output)).toBe(release);
  });

  it('reads nothing from output that names no version', () => {
    expect(javaRelease('bash: java: command not found')).toBeUndefined();
  });

  it('refuses a missing java with one line that says what to install', () => {
    expect(() => checkJava('/nonexistent/java')).toThrow(JavaMissing);
    expect(() => checkJava('/nonexistent/java')).toThrow(
      /^DynamoDB Local needs Java 17 or later \(no `java` on PATH\): install it \(apt-get install default-jre-headless, brew install openjdk@17\) or set DYNAMODB_ENDPOINT/,
    );
  });
});
