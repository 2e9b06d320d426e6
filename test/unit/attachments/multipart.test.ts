import { describe, expect, it } from 'vitest';
import { parseMultipart } from '../../../shared/attachments/multipart.js';
import { ApiError } from '../../../shared/http/errors.js';

const LIMITS = { maxFileBytes: 10, maxFiles: 1, maxFields: 2, maxFieldBytes: 16 };
const TYPE = 'multipart/form-data; boundary=XyZ';

const body = (...parts: string[]) => Buffer.from(`${parts.map((part) => `--XyZ\r\n${part}\r\n`).join('')}--XyZ--\r\n`, 'latin1');
const file = (content: string, disposition = 'form-data; name="file"; filename="a.txt"') =>
  `Content-Disposition: ${disposition}\r\nContent-Type: text/plain\r\n\r\n${content}`;

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('parseMultipart', () => {
  it('reads fields and a file', async () => {
    const form = await parseMultipart(body('Content-Disposition: form-data; name="message_id"\r\n\r\nm1', file('hello')), TYPE, LIMITS);
    expect(form.fields).toEqual({ message_id: 'm1' });
    expect(form.files).toEqual([{ field: 'file', filename: 'a.txt', contentType: 'text/plain', bytes: Buffer.from('hello') }]);
  });

  it('tells a file of exactly the limit from one a byte over', async () => {
    expect((await parseMultipart(body(file('x'.repeat(10))), TYPE, LIMITS)).files[0]!.bytes.length).toBe(10);
    expect((await refusal(parseMultipart(body(file('x'.repeat(11))), TYPE, LIMITS))).code).toBe('file_too_large');
  });

  it('takes a field of exactly the byte limit and as many fields as allowed beside the file, refusing one more of each', async () => {
    const field = (name: string, value: string) => `Content-Disposition: form-data; name="${name}"\r\n\r\n${value}`;
    // 16 bytes of UTF-8 in 8 characters: the limit is in bytes.
    const utf8Body = Buffer.from(`--XyZ\r\n${field('a', 'é'.repeat(8))}\r\n--XyZ\r\n${file('x')}\r\n--XyZ--\r\n`, 'utf8');
    const atLimit = await parseMultipart(utf8Body, TYPE, LIMITS);
    expect(Buffer.byteLength(atLimit.fields.a!)).toBe(16);
    expect((await refusal(parseMultipart(body(field('a', 'x'.repeat(17)), file('x')), TYPE, LIMITS))).code).toBe('parameter_invalid');
    const allFields = await parseMultipart(body(field('a', '1'), field('b', '2'), file('x')), TYPE, LIMITS);
    expect(allFields.fields).toEqual({ a: '1', b: '2' });
    expect(allFields.files).toHaveLength(1);
    expect((await refusal(parseMultipart(body(field('a', '1'), field('b', '2'), field('c', '3'), file('x')), TYPE, LIMITS))).code).toBe(
      'body_invalid',
    );
  });

  it('decodes filename* and raw UTF-8 names, and undoes the HTML form escapes', async () => {
    const utf8 = Buffer.from(
      body(file('x', 'form-data; name="file"; filename="été.txt"')).toString('latin1').replace('Ã©tÃ©', 'été'),
      'utf8',
    );
    expect((await parseMultipart(utf8, TYPE, LIMITS)).files[0]!.filename).toBe('été.txt');
    const extended = body(file('x', 'form-data; name="file"; filename*=UTF-8\'\'%C3%A9t%C3%A9.txt'));
    expect((await parseMultipart(extended, TYPE, LIMITS)).files[0]!.filename).toBe('été.txt');
    const escaped = body(file('x', 'form-data; name="file"; filename="a%22b%0D%0A.txt"'));
    expect((await parseMultipart(escaped, TYPE, LIMITS)).files[0]!.filename).toBe('a"b\r\n.txt');
  });

  it('settles with 400 on every malformed body', async () => {
    const good = body(file('hello'));
    for (const [input, type] of [
      [good.subarray(0, good.length - 10), TYPE],
      [good.subarray(0, 20), TYPE],
      [Buffer.alloc(0), TYPE],
      [good, 'multipart/form-data'],
      [good, 'multipart/form-data; boundary=other'],
      [Buffer.from('--XyZ\r\nno header end'), TYPE],
    ] as const) {
      const error = await refusal(parseMultipart(input, type, LIMITS));
      expect(error.status).toBe(400);
    }
  });

  it('refuses a second file, a repeated field, too many fields and an oversized field', async () => {
    const field = (name: string, value: string) => `Content-Disposition: form-data; name="${name}"\r\n\r\n${value}`;
    expect((await refusal(parseMultipart(body(file('a'), file('b')), TYPE, LIMITS))).param).toBe('file');
    expect((await refusal(parseMultipart(body(field('a', '1'), field('a', '2')), TYPE, LIMITS))).param).toBe('a');
    expect((await refusal(parseMultipart(body(field('a', '1'), field('b', '2'), field('c', '3')), TYPE, LIMITS))).code).toBe(
      'body_invalid',
    );
    expect((await refusal(parseMultipart(body(field('a', 'x'.repeat(17))), TYPE, LIMITS))).param).toBe('a');
  });

  it('keeps a field named __proto__ as a field', async () => {
    const field = 'Content-Disposition: form-data; name="__proto__"\r\n\r\nx';
    const form = await parseMultipart(body(field, file('x')), TYPE, LIMITS);
    expect(Object.keys(form.fields)).toEqual(['__proto__']);
  });

  it.each([
    { label: 'text/plain, said so', header: 'Content-Type: text/plain; charset=utf-8', expected: 'text/plain' },
    { label: 'absent', header: '', expected: undefined },
    { label: 'unparsable', header: 'Content-Type: ;;;', expected: undefined },
    { label: 'a bare word', header: 'Content-Type: pdf', expected: undefined },
    { label: 'a parsable type', header: 'Content-Type: Application/PDF', expected: 'application/pdf' },
  ])('reports a file part whose Content-Type is $label as $expected', async ({ header, expected }) => {
    const part = `Content-Disposition: form-data; name="file"; filename="g.pdf"${header ? `\r\n${header}` : ''}\r\n\r\n%PDF`;
    const form = await parseMultipart(body(part), TYPE, LIMITS);
    expect(form.files[0]!.contentType).toBe(expected);
  });

  it('reads the part headers of the file, not those of a text field before it', async () => {
    const field = 'Content-Disposition: form-data; name="note"\r\nContent-Type: text/plain\r\n\r\nhi';
    const part = 'Content-Disposition: form-data; name="file"; filename="g.pdf"\r\nContent-Type: ;;;\r\n\r\n%PDF';
    const form = await parseMultipart(body(field, part), TYPE, { ...LIMITS, maxFields: 2 });
    expect(form.files[0]!.contentType).toBeUndefined();
  });
});
