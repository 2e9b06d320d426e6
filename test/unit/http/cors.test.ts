import { describe, expect, it } from 'vitest';
import { readConfig } from '../../../shared/config.js';
import { corsHeaders, gatewayAllowOrigin, gatewayResponseCorsHeaders, preflightHeaders } from '../../../shared/http/cors.js';

describe('CORS configuration', () => {
  it('allows no origin by default', () => {
    expect(readConfig({}).corsOrigins).toEqual([]);
    expect(corsHeaders('https://app.example', readConfig({}).corsOrigins)).toEqual({ vary: 'Origin' });
  });

  it('reads a comma-separated list and ignores blanks', () => {
    expect(readConfig({ CORS_ORIGINS: ' https://a.example ,, http://127.0.0.1:5173 ' }).corsOrigins).toEqual([
      'https://a.example',
      'http://127.0.0.1:5173',
    ]);
  });

  it('matches origins exactly (scheme, host and port)', () => {
    const allowed = ['https://a.example'];
    expect(corsHeaders('https://a.example', allowed)['access-control-allow-origin']).toBe('https://a.example');
    for (const origin of ['http://a.example', 'https://a.example:8443', 'https://a.example.evil', 'null']) {
      expect(corsHeaders(origin, allowed)['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('allows any origin with *', () => {
    expect(corsHeaders('https://b.example', ['*'])['access-control-allow-origin']).toBe('*');
  });

  it('answers a preflight with the methods plus OPTIONS, and allows only a configured origin', () => {
    const allowed = preflightHeaders('https://a.example', ['https://a.example'], ['GET', 'POST']);
    expect(allowed['access-control-allow-methods']).toBe('GET, POST, OPTIONS');
    expect(allowed['access-control-allow-origin']).toBe('https://a.example');
    expect(preflightHeaders('https://x.example', ['https://a.example'], ['GET'])['access-control-allow-origin']).toBeUndefined();
  });

  it('gives gateway responses a fixed origin when one (or *) is configured, the request origin when several, none by default', () => {
    expect(gatewayAllowOrigin([])).toEqual({ kind: 'none' });
    expect(gatewayAllowOrigin(['*'])).toEqual({ kind: 'fixed', origin: '*' });
    expect(gatewayAllowOrigin(['https://a.example'])).toEqual({ kind: 'fixed', origin: 'https://a.example' });
    expect(gatewayAllowOrigin(['https://a.example', 'https://b.example'])).toEqual({ kind: 'request-origin' });
    expect(gatewayResponseCorsHeaders('https://x.example', [])).toEqual({ vary: 'Origin' });
    expect(gatewayResponseCorsHeaders('https://x.example', ['https://a.example'])['access-control-allow-origin']).toBe('https://a.example');
  });
});
