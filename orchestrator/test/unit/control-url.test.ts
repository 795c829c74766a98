// Which control URLs a heartbeat may name (issue 26, SSRF through the heartbeat): the orchestrator sends the agent
// credential and create bodies there, so queries, fragments, credentials and link-local / metadata addresses are
// refused by the same rule the heartbeat route applies (controlUrlProblem in services/heartbeat-input.ts).

import { describe, expect, it } from 'vitest';
import { controlUrlProblem } from '../../src/server/services/heartbeat-input.js';

describe('controlUrlProblem', () => {
  it.each([
    'http://127.0.0.1:8081',
    'http://127.0.0.1:8081/',
    'https://agent-1.example.net:8443',
    'http://agent:8081',
    'http://10.0.0.12:8081',
    'http://192.168.1.5:8081',
    'http://[::1]:8081',
    'http://[fd12:3456::1]:8081',
  ])('allows %s', (url) => expect(controlUrlProblem(url)).toBeUndefined());

  it.each<[string, string]>([
    ['http://127.0.0.1:9/latest/meta-data/iam?x=', 'query string'],
    ['http://127.0.0.1:9/?', 'query string'],
    ['http://127.0.0.1:9/#frag', 'fragment'],
    ['http://user:pw@127.0.0.1:9', 'credentials'],
    ['http://user@127.0.0.1:9', 'credentials'],
    ['http://169.254.169.254', 'link-local'],
    ['http://169.254.170.2:80', 'link-local'],
    ['http://2852039166/', 'link-local'], // 169.254.169.254 as one decimal number
    ['http://0xa9.0xfe.0xa9.0xfe/', 'link-local'],
    ['http://[fe80::1]:8081', 'link-local'],
    ['http://[::ffff:169.254.169.254]/', 'link-local'],
    ['http://[fd00:ec2::254]/', 'metadata'],
    ['http://metadata.google.internal/computeMetadata/v1', 'metadata'],
    ['http://metadata/', 'metadata'],
    ['http://0.0.0.0:8081', 'unspecified'],
    ['http://[::]:8081', 'unspecified'],
    ['file:///etc/passwd', 'http or https'],
    ['not a url', 'not a URL'],
  ])('refuses %s (%s)', (url, why) => expect(controlUrlProblem(url)).toContain(why));
});
