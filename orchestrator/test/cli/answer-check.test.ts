// ectl checks every JSON answer against the public contract's response schema
// of its route (src/cli/answer-check.ts): the route lookup, the check, and an
// ApiClient reading a wrong answer from a real HTTP server on 127.0.0.1.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAnswer, contractRouteOf } from '../../src/cli/answer-check.js';
import { ApiClient } from '../../src/cli/api-client.js';
import { CliError } from '../../src/cli/errors.js';

describe('contractRouteOf', () => {
  it.each([
    ['GET', '/hosts', 'GET /hosts'],
    ['GET', '/hosts/h%201', 'GET /hosts/:id'],
    ['GET', '/instances/lobby', 'GET /instances/:id'],
    ['POST', '/instances/preview', 'POST /instances/preview'],
    ['GET', '/instances/lobby/update-plan?image=mc%3A2', 'GET /instances/:id/update-plan'],
    ['GET', '/no/such/route', undefined],
    ['PATCH', '/hosts', undefined],
  ])('%s %s is %s', (method, path, key) => {
    expect(contractRouteOf(method, path)?.key).toBe(key);
  });
});

describe('checkAnswer', () => {
  it('passes an answer of the contract shape, and anything the contract does not describe as JSON', () => {
    expect(() => checkAnswer('GET', '/hosts', 200, { hosts: [] })).not.toThrow();
    expect(() => checkAnswer('GET', '/instances/x/logs', 200, 'text')).not.toThrow(); // text/plain route
    expect(() => checkAnswer('GET', '/no/such/route', 200, 42)).not.toThrow();
    expect(() => checkAnswer('GET', '/hosts', 299, 42)).not.toThrow(); // a status the contract does not list
  });

  it('refuses a mismatch with an error naming the call, the route and the field', () => {
    let err: unknown;
    try {
      checkAnswer('GET', '/hosts?x=1', 200, { hosts: [{ id: 7 }] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CliError);
    expect((err as CliError).kind).toBe('runtime');
    const message = (err as CliError).message;
    expect(message).toContain('GET /hosts: ');
    expect(message).toContain('(GET /hosts)');
    expect(message).toContain('/hosts/0');
    expect(message).toMatch(/and \d+ more/);
  });
});

describe('ApiClient', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api/v1/hosts') res.end(JSON.stringify({ hosts: 'not a list' }));
      else if (req.url === '/api/v1/health') res.end(JSON.stringify({ status: 'ok' }));
      else res.end(JSON.stringify({ anything: true }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('a wrong answer by path is an error naming the path, not a wrong value', async () => {
    const client = new ApiClient({ url, token: 't' });
    await expect(client.get('/hosts')).rejects.toThrow(/^GET \/hosts: .*does not match the public contract \(GET \/hosts\): \/hosts: /);
    await expect(client.call('GET /hosts', {})).rejects.toThrow(/does not match the public contract/);
  });

  it('an answer of a path outside the contract is passed through', async () => {
    const client = new ApiClient({ url, token: 't' });
    expect(await client.get('/not-in-the-contract')).toEqual({ anything: true });
  });
});
