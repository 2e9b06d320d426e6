import type { APIGatewayProxyResult } from 'aws-lambda';

/** What a handler returns before it is shaped into a proxy result. */
export interface ApiResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export const ok = (body: unknown): ApiResponse => ({ status: 200, body });
export const created = (body: unknown): ApiResponse => ({ status: 201, body });
export const deleted = (id: string): ApiResponse => ({ status: 200, body: { id, deleted: true } });

export function toProxyResult(response: ApiResponse, requestId: string): APIGatewayProxyResult {
  return {
    statusCode: response.status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': requestId,
      ...response.headers,
    },
    body: JSON.stringify(response.body),
  };
}
