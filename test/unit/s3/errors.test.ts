import { HttpResponse } from '@smithy/core/protocols';
import { isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';
import { describe, expect, it } from 'vitest';
import { isBackendUnavailable } from '../../../shared/http/unavailable.js';
import { endsWithError, s3ErrorOf } from '../../../shared/s3/errors.js';

/** Error answers as S3's API reference shows them (Error responses; CompleteMultipartUpload's 200 that carries one). */
const errorBody = (code: string, message: string) => `<?xml version="1.0" encoding="UTF-8"?>
<Error>
  <Code>${code}</Code>
  <Message>${message}</Message>
  <Resource>/amzn-s3-demo-bucket/files/photo.jpg</Resource>
  <RequestId>4442587FB7D0A2F9</RequestId>
  <HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtRPfTaOFg==</HostId>
</Error>`;

const answer = (statusCode: number, headers: Record<string, string> = {}) =>
  new HttpResponse({
    statusCode,
    headers: { 'x-amz-request-id': '656c76696e6727732072657175657374', 'x-amz-id-2': 'Uuag1Lu==', ...headers },
  });

describe('S3 errors', () => {
  it('names the error by its Code, with the status and request ids where the SDK puts them', () => {
    const error = s3ErrorOf(answer(404), errorBody('NoSuchUpload', 'The specified upload does not exist.'));
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('NoSuchUpload');
    expect(error.message).toBe('The specified upload does not exist.');
    expect(error.$fault).toBe('client');
    expect(error.$metadata).toEqual({ httpStatusCode: 404, requestId: '656c76696e6727732072657175657374', extendedRequestId: 'Uuag1Lu==' });
    expect(isBackendUnavailable(error)).toBe(false);
    expect(isTransientError(error) || isThrottlingError(error)).toBe(false);
  });

  it('names a HEAD 404, which has no body, NotFound as the S3 client does; other body-less refusals Unknown', () => {
    const notFound = s3ErrorOf(answer(404), '');
    expect(notFound.name).toBe('NotFound');
    expect(notFound.$metadata.httpStatusCode).toBe(404);
    expect(s3ErrorOf(answer(403), '').name).toBe('Unknown');
  });

  it('takes the request id from the body when the headers lack it', () => {
    const error = s3ErrorOf(
      new HttpResponse({ statusCode: 400, headers: {} }),
      errorBody('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed object size.'),
    );
    expect(error.name).toBe('EntityTooSmall');
    expect(error.$metadata.requestId).toBe('4442587FB7D0A2F9');
  });

  it('makes SlowDown a throttling error and a 500 a transient one, as the SDK retry strategy classifies them, and both mean "unavailable"', () => {
    const slowDown = s3ErrorOf(answer(503), errorBody('SlowDown', 'Please reduce your request rate.'));
    expect(isThrottlingError(slowDown)).toBe(true);
    expect(isBackendUnavailable(slowDown)).toBe(true);
    const internal = s3ErrorOf(answer(500), errorBody('InternalError', 'We encountered an internal error. Please try again.'));
    expect(internal.$fault).toBe('server');
    expect(isTransientError(internal)).toBe(true);
    expect(isBackendUnavailable(internal)).toBe(true);
    // A 501 is a server error the SDK does not retry.
    expect(
      isServerError(
        s3ErrorOf(answer(501), errorBody('NotImplemented', 'A header you provided implies functionality that is not implemented.')),
      ),
    ).toBe(true);
  });

  it('reads an answer that is not XML (a proxy page) by its status', () => {
    const error = s3ErrorOf(answer(502), '<html><body><h1>502 Bad Gateway</h1></body></html');
    expect(error.name).toBe('Unknown');
    expect(isTransientError(error)).toBe(true);
    expect(isBackendUnavailable(error)).toBe(true);
  });

  it("recognises CompleteMultipartUpload's 200 that carries an <Error>, whitespace around it included, and reads it as a 503", () => {
    const body = `\n \n \n${errorBody('InternalError', 'We encountered an internal error. Please try again.')}\n`;
    expect(endsWithError(Buffer.from(body))).toBe(true);
    const error = s3ErrorOf(answer(200), body, 503);
    expect(error.name).toBe('InternalError');
    expect(error.$metadata.httpStatusCode).toBe(503);
    expect(isTransientError(error)).toBe(true);
  });

  it('does not take a successful answer for an error', () => {
    const completed = `<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Location>http://b.s3.amazonaws.com/k</Location><Bucket>b</Bucket><Key>k</Key><ETag>"3858f62230ac3c915f300c664312c11f-9"</ETag></CompleteMultipartUploadResult>`;
    expect(endsWithError(Buffer.from(completed))).toBe(false);
    expect(endsWithError(new Uint8Array())).toBe(false);
  });

  it('keeps the raw answer hidden from logs, where the retry strategy still finds it', () => {
    const response = answer(503, { 'retry-after': '2' });
    const error = s3ErrorOf(response, errorBody('SlowDown', 'Please reduce your request rate.'));
    expect(error.$response).toBe(response);
    expect(Object.keys(error)).not.toContain('$response');
    expect(JSON.stringify(error)).not.toContain('retry-after');
  });
});
