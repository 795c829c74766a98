// The database's identity (no credentials) and the Redis change channel derived
// from it: replicas of one deployment agree however their URLs spell the user
// or password; deployments on different databases never share a channel.

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { orchestratorConfig } from '../../src/server/config.js';
import { defaultRedisPrefix, redisChangeChannel } from '../../src/server/changes/redis-change-port.js';
import { databaseIdentity } from '../../src/store/open-store.js';

describe('databaseIdentity', () => {
  it.each([
    ['postgres://ec:s3cret@DB.example:5432/endercloud', 'postgres://db.example:5432/endercloud'],
    ['postgresql://other:another-pass@db.example/endercloud', 'postgres://db.example:5432/endercloud'],
    ['postgres://ec@10.0.0.5:6432/ec_prod?sslmode=require', 'postgres://10.0.0.5:6432/ec_prod'],
    ['postgres://ec:pw@db/ec?options=-c%20search_path%3Dtenant_a', 'postgres://db:5432/ec?options=-c search_path=tenant_a'],
    ['postgres://ec:pw@db', 'postgres://db:5432/ec'],
    ['sqlite:/var/lib/endercloud/endercloud.db', 'sqlite:/var/lib/endercloud/endercloud.db'],
    ['sqlite:///var/lib/endercloud/endercloud.db', 'sqlite:/var/lib/endercloud/endercloud.db'],
  ])('%s → %s', (url, identity) => {
    expect(databaseIdentity(url, '/data')).toBe(identity);
  });

  it("SQLite without a URL is the data dir's file, absolute; a relative sqlite: path is resolved", () => {
    expect(databaseIdentity(undefined, '/data')).toBe('sqlite:/data/endercloud.db');
    expect(databaseIdentity('', 'rel/data')).toBe(`sqlite:${path.resolve('rel/data/endercloud.db')}`);
    expect(databaseIdentity('sqlite:rel/x.db', '/data')).toBe(`sqlite:${path.resolve('rel/x.db')}`);
  });

  it('never carries a password or user', () => {
    const id = databaseIdentity('postgres://admin:hunter2-very-secret@db:5432/ec', '/d');
    expect(id).not.toMatch(/hunter2|admin/);
  });
});

describe('redisChangeChannel', () => {
  const channel = (env: Record<string, string>) => redisChangeChannel(orchestratorConfig({ ENDERCLOUD_DATA_DIR: '/data', ...env }));

  it('by default one channel per database: the same for every spelling of it, another for another database', () => {
    const a = channel({ ENDERCLOUD_DATABASE_URL: 'postgres://ec:one@db:5432/ec' });
    expect(a).toMatch(/^endercloud:[0-9a-f]{16}:changes$/);
    expect(channel({ ENDERCLOUD_DATABASE_URL: 'postgresql://other:two@DB/ec' })).toBe(a);
    expect(channel({ ENDERCLOUD_DATABASE_URL: 'postgres://ec:one@db:5432/ec_staging' })).not.toBe(a);
    expect(channel({ ENDERCLOUD_DATABASE_URL: 'postgres://ec:one@db2:5432/ec' })).not.toBe(a);
    expect(channel({})).toBe(`${defaultRedisPrefix(undefined, '/data')}:changes`);
  });

  it('ENDERCLOUD_REDIS_PREFIX replaces the derived prefix; a bad one stops the start naming the variable', () => {
    expect(channel({ ENDERCLOUD_REDIS_PREFIX: 'prod-eu', ENDERCLOUD_DATABASE_URL: 'postgres://db/ec' })).toBe('prod-eu:changes');
    expect(() => channel({ ENDERCLOUD_REDIS_PREFIX: 'has space' })).toThrow(/ENDERCLOUD_REDIS_PREFIX/);
    expect(() => channel({ ENDERCLOUD_REDIS_PREFIX: ':leading' })).toThrow(/ENDERCLOUD_REDIS_PREFIX/);
  });
});
