// Which pull failures a retry cannot cure (the agent's classification of the
// engine's message), and how that verdict crosses the wire: the agent's answer
// says `retryable: false`, and the orchestrator's agent driver gives up at once.
import { describe, expect, it } from 'vitest';
import { definitivePullFailure } from '../../src/agent/docker-runtime.js';
import { agentError } from '../../src/server/drivers/agent-driver.js';
import { AppError, errorBody } from '../../src/shared/errors.js';

describe('definitivePullFailure', () => {
  it.each([
    // Engine messages as Docker 2x answers them (status 500 for all of them).
    ['Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.255.255.53:53: no such host', true],
    ['Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused', true],
    ['manifest for itzg/minecraft-server:nope not found: manifest unknown: manifest unknown', true],
    ["pull access denied for nobody/nothing, repository does not exist or may require 'docker login'", true],
    ['unauthorized: authentication required', true],
    ['invalid reference format', true],
    [
      'Get "https://registry-1.docker.io/v2/": net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)',
      false,
    ],
    ['Get "https://registry-1.docker.io/v2/": net/http: TLS handshake timeout', false],
    ['received unexpected HTTP status: 503 Service Unavailable', false],
    ['read tcp 10.0.0.2:40000->1.2.3.4:443: read: connection reset by peer', false],
    ['toomanyrequests: You have reached your pull rate limit', false],
  ])('%s → final %s', (message, final) => {
    expect(definitivePullFailure(message)).toBe(final);
  });
});

describe('a final error on the wire', () => {
  it('is answered with retryable: false, and the driver does not retry it although it is a 5xx', () => {
    const err = new AppError('IMAGE_PULL_FAILED', 'pulling image x failed: no such host', { final: true, retryable: true });
    expect(err.retryable).toBe(false);
    const body = errorBody(err);
    expect(body).toEqual({ error: { code: 'IMAGE_PULL_FAILED', message: 'pulling image x failed: no such host', retryable: false } });
    expect(agentError(502, body, 'PUT /instances/i-1', 'http://a')).toMatchObject({ code: 'IMAGE_PULL_FAILED', retryable: false });
  });

  it("leaves every other answer as before: 5xx retryable, 4xx not, the agent's details kept", () => {
    const transient = errorBody(new AppError('IMAGE_PULL_FAILED', 'TLS handshake timeout', { retryable: true }));
    expect(transient.error).not.toHaveProperty('retryable');
    expect(agentError(502, transient, 'PUT /instances/i-1', 'http://a').retryable).toBe(true);
    const exhausted = errorBody(
      new AppError('PORT_RANGE_EXHAUSTED', 'no port', { retryable: true, details: { portRange: '30000-30001' } }),
    );
    expect(agentError(503, exhausted, 'POST /instances/i-1/replace', 'http://a')).toMatchObject({
      retryable: true,
      details: { portRange: '30000-30001', agentStatus: 503 },
    });
    expect(agentError(404, errorBody(new AppError('INSTANCE_NOT_FOUND', 'gone')), 'GET /instances/i-1', 'http://a').retryable).toBe(false);
  });
});
