import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSdkConfig } from './config.js';
import { MisoSdkError } from './errors.js';

test('sdk config - defaults and required function name', () => {
  const c = loadSdkConfig({ MISO_FUNCTION: 'counter' });
  assert.equal(c.socket, '/run/miso/agent.sock');
  assert.equal(c.defaultObject, 'default');
  assert.match(c.replica, /:\d+$/);
  assert.throws(
    () => loadSdkConfig({}),
    (e: unknown) => e instanceof MisoSdkError && e.code === 'EDGE_MISO_SDK_CONFIG' && /MISO_FUNCTION/.test(e.message),
  );
});
